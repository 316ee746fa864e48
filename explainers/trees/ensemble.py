"""The flattened tree ensemble: every tree model, one set of flat arrays.

Each model family has a reader (:mod:`explainers.trees.sklearn` today) that turns a
fitted model into a :class:`TreeEnsemble`: all nodes of all trees stored back to
back in flat arrays, plus the few ensemble-level numbers that turn summed leaf
values into predictions::

    raw(x)    = base + scale * sum_t value_t[leaf_t(x)]          # (n_raw,)
    output(x) = transform(raw(x))                               # (n_outputs,)

The representation is what fast exact algorithms need (the tree walk behind
:func:`explainers.pdp.partial_dependence` with ``method="tree"``, and Tree SHAP):
numeric arrays only, so numba kernels can read them directly, and one routing
rule for every model::

    x = X[row, feature[node]]           (rounded to float32 first if float32_inputs)
    go left  if isnan(x) and missing_go_left[node]
    go right if isnan(x) and not missing_go_left[node]
    go left  if x <= threshold[node]    (a value equal to the threshold goes left)
    go right otherwise

Some nodes carry a *rule* instead of (or on top of) the plain comparison; it is
stored in ``cat_bits`` from ``cat_start[node]`` on (``cat_start[node] == -1``: no
rule)::

    cat_bits[s]      = k, the number of 64-bit words of the node's category set
    cat_bits[s + 1]  = flags: RULE_CATEGORICAL, RULE_OTHER_LEFT, RULE_ZERO_MISSING
    cat_bits[s + 2:s + 2 + k] = the set, category c in word c >> 6, bit c & 63

    categorical node (RULE_CATEGORICAL):
        NaN                              -> missing_go_left[node]
        0 <= x < 64 k, c = int(x) in set -> left
        0 <= x < 64 k, c not in set      -> right
        x < 0 or x >= 64 k               -> left if RULE_OTHER_LEFT else right
    numeric node with RULE_ZERO_MISSING (LightGBM's zero_as_missing):
        NaN or |x| <= 1e-35              -> missing_go_left[node]
        otherwise                        -> x <= threshold[node]

A categorical feature's values reach the trees as integer codes; where the model
knows its categories (``categories[j]``, e.g. the categories of a pandas column
the model was fitted on), :meth:`TreeEnsemble.prepare_inputs` turns a data
frame's values into their positions in that list (unknown values become -1, empty
cells NaN).

The tests check each reader's reconstruction against the library's own
``predict`` / ``predict_proba`` (to 1e-12) for every model type.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

__all__ = ["TreeEnsemble", "TRANSFORMS", "assemble", "RULE_CATEGORICAL", "RULE_OTHER_LEFT",
           "RULE_ZERO_MISSING", "ZERO_MISSING_EPS", "encode_categories", "rule_record"]

TRANSFORMS = ("identity", "exp", "sigmoid", "softmax")

#: flags of a node rule (see the module docstring)
RULE_CATEGORICAL = 1
RULE_OTHER_LEFT = 2
RULE_ZERO_MISSING = 4
#: category codes a split set may name (0 .. MAX_CATEGORY_CODE - 1): bounds the memory a file can claim
MAX_CATEGORY_CODE = 1 << 16
#: LightGBM's kZeroThreshold: |x| at or below it counts as zero
ZERO_MISSING_EPS = 1e-35


@dataclass(frozen=True, eq=False)
class TreeEnsemble:
    """All trees of a fitted model in flat, normalised arrays.

    Node ``i`` of the ensemble is described by entry ``i`` of every per-node
    array. Tree ``t`` owns nodes ``node_offsets[t]`` to ``node_offsets[t + 1] - 1``
    and its root is ``node_offsets[t]``. Child indices are global (already offset).

    Attributes
    ----------
    feature : ndarray of shape (n_nodes,), dtype=int32
        Input column a node splits on; -1 at leaves.
    threshold : ndarray of shape (n_nodes,), dtype=float64
        Split threshold: rows with ``x <= threshold`` go left. NaN at leaves.
    left, right : ndarray of shape (n_nodes,), dtype=int32
        Global index of each child; -1 at leaves.
    missing_go_left : ndarray of shape (n_nodes,), dtype=uint8
        1 where a NaN input goes to the left child, 0 where it goes right.
    value : ndarray of shape (n_nodes, n_raw), dtype=float64
        Node value before ``scale``: the mean target of a regression tree, the
        class fractions of a classification tree, the (learning-rate free for
        GradientBoosting, learning-rate included for HistGradientBoosting) leaf
        value of a boosting tree. A boosting tree that fits one class of a
        multiclass model has zeros in the other columns (see ``tree_output``).
        Defined at internal nodes too (the model's own internal value).
    cover : ndarray of shape (n_nodes,), dtype=float64
        Training weight that reached each node (``weighted_n_node_samples`` for
        scikit-learn trees, the sample ``count`` for HistGradientBoosting).
    node_offsets : ndarray of shape (n_trees + 1,), dtype=int64
        Where each tree starts in the node arrays; the last entry is n_nodes.
    tree_output : ndarray of shape (n_trees,), dtype=int64
        The raw column a tree contributes to, or -1 when it contributes a whole
        ``value`` row (forests, single-output boosting).
    base : ndarray of shape (n_raw,), dtype=float64
        Constant added to the scaled sum: the init raw prediction of gradient
        boosting, the baseline of histogram gradient boosting, 0 for forests.
    scale : float
        Multiplies the sum of leaf values: ``1 / n_trees`` for forests (their
        average), the learning rate for GradientBoosting, 1 otherwise.
    transform : {"identity", "exp", "sigmoid", "softmax"}
        Maps ``raw`` to the model's prediction: ``exp`` for log-link
        regressors (Poisson, Gamma), ``sigmoid`` for binary boosting (giving the
        two columns ``[1 - p, p]``), ``softmax`` for multiclass boosting.
    float32_inputs : bool
        True for scikit-learn trees, which round inputs to float32 before
        comparing them with the float64 thresholds; HistGradientBoosting
        compares float64 inputs.
    n_features : int
        Number of input columns the model expects.
    max_depth : int
        Depth of the deepest leaf over all trees (root at depth 0).
    model_name : str
        Class name of the flattened model.
    cat_start : ndarray of shape (n_nodes,), dtype=int64
        Where a node's rule starts in ``cat_bits``; -1 for a plain node.
    cat_bits : ndarray, dtype=int64
        The node rules back to back (see the module docstring); the set words
        are bit patterns (int64 so that compiled kernels need no unsigned mix).
    categories : tuple
        Per input column: None for a numeric column, or the tuple of category
        values whose positions are the codes the trees compare.
    missing_value : float or None
        An input value read as missing (XGBoost's ``missing=``: every input equal
        to it follows the default direction, as NaN does); None for NaN only.
    numeric_codes : bool
        Whether numbers in a categorical column of a data frame are the category
        codes themselves (XGBoost and LightGBM read them so; see
        :func:`codes_given`) rather than labels to look up.
    truncate_codes : bool
        Whether a categorical input is cut toward zero before its set is looked up,
        as LightGBM's ``static_cast<int>`` does (−0.5 is category 0 there; XGBoost
        sends it where unknown categories go).
    """

    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    missing_go_left: np.ndarray
    value: np.ndarray
    cover: np.ndarray
    node_offsets: np.ndarray
    tree_output: np.ndarray
    base: np.ndarray
    scale: float
    transform: str
    float32_inputs: bool
    n_features: int
    max_depth: int
    model_name: str
    cat_start: np.ndarray | None = None
    cat_bits: np.ndarray | None = None
    categories: tuple | None = None
    missing_value: float | None = None
    numeric_codes: bool = False
    truncate_codes: bool = False

    def __post_init__(self):
        if self.cat_start is None:
            object.__setattr__(self, "cat_start", np.full(len(self.feature), -1, np.int64))
        if self.cat_bits is None:
            object.__setattr__(self, "cat_bits", np.zeros(0, np.int64))
        if self.categories is None:
            object.__setattr__(self, "categories", (None,) * int(self.n_features))

    @cached_property
    def packed_nodes(self) -> tuple[np.ndarray, np.ndarray]:
        """The walk's node records, built once per ensemble (:func:`~explainers.trees.walks.pack_nodes`)."""
        from .walks import pack_nodes

        return pack_nodes(self.feature, self.threshold, self.left, self.right)

    @cached_property
    def _nodes_by_feature(self) -> dict[int, np.ndarray]:
        order = np.argsort(self.feature, kind="stable")
        keys, starts = np.unique(self.feature[order], return_index=True)
        bounds = list(starts[1:]) + [len(order)]
        return {int(k): order[a:b] for k, a, b in zip(keys, starts, bounds) if k >= 0}

    def nodes_on(self, f: int) -> np.ndarray:
        """Positions (ascending) of the nodes that split on input column ``f`` (built once)."""
        return self._nodes_by_feature.get(int(f), np.zeros(0, np.int64))

    @property
    def has_rules(self) -> bool:
        """True if some node is categorical or treats zero as missing."""
        return bool((self.cat_start >= 0).any())

    def rule_features(self) -> np.ndarray:
        """Sorted input columns that some rule node splits on."""
        return np.unique(self.feature[self.cat_start >= 0])

    def categorical_features(self) -> list[int]:
        """Input columns with a categorical split (or known categories)."""
        flagged = self.cat_start >= 0
        cat = flagged.copy()
        cat[flagged] = (self.cat_bits[self.cat_start[flagged] + 1] & RULE_CATEGORICAL) != 0
        out = set(int(f) for f in self.feature[cat])
        out |= {j for j, c in enumerate(self.categories) if c is not None}
        return sorted(out)

    # ----------------------------------------------------------------- sizes
    @property
    def n_trees(self) -> int:
        return len(self.node_offsets) - 1

    @property
    def n_nodes(self) -> int:
        return len(self.feature)

    @property
    def n_raw(self) -> int:
        """Columns of the raw (pre-transform) prediction."""
        return self.value.shape[1]

    @property
    def n_outputs(self) -> int:
        """Columns of the transformed prediction (2 for a sigmoid model)."""
        return 2 if self.transform == "sigmoid" else self.n_raw

    @property
    def roots(self) -> np.ndarray:
        return self.node_offsets[:-1]

    @property
    def transform_code(self) -> int:
        """Integer code of :attr:`transform`, for numba kernels."""
        return TRANSFORMS.index(self.transform)

    # ---------------------------------------------------------- predictions
    def prepare_inputs(self, X) -> np.ndarray:
        """Return X as a C-contiguous float64 array, rounded through float32 if
        the model compares float32 inputs (so walks route rows as predict does).

        A data frame's categorical columns (those with ``categories``) become
        category codes first (:func:`encode_categories`).
        """
        if any(c is not None for c in self.categories) and hasattr(X, "iloc"):
            arr = encode_categories(X, self.categories, self.numeric_codes)
        else:
            arr = np.asarray(X, dtype=np.float64)
        if self.float32_inputs:
            with np.errstate(over="ignore"):
                arr = arr.astype(np.float32).astype(np.float64)
        return np.ascontiguousarray(self.truncated(self.as_missing(arr)))

    def truncated(self, arr: np.ndarray) -> np.ndarray:
        """Rows ``arr`` with their categorical columns cut toward zero where
        :attr:`truncate_codes`; ``arr`` itself otherwise."""
        cats = self.code_columns() if self.truncate_codes and arr.ndim == 2 else []
        if not cats:
            return arr
        arr = np.array(arr, dtype=np.float64, copy=True)
        arr[:, cats] = np.trunc(arr[:, cats])
        return arr

    def code_columns(self) -> list[int]:
        """:meth:`categorical_features`, computed once (inputs and grids read it on every call)."""
        cached = self.__dict__.get("_code_cols")
        if cached is None:
            cached = self.categorical_features()
            object.__setattr__(self, "_code_cols", cached)
        return cached

    def as_missing(self, arr: np.ndarray) -> np.ndarray:
        """``arr`` (inputs as the trees compare them) with the values equal to
        :attr:`missing_value` set to NaN; ``arr`` itself when there is none."""
        if self.missing_value is None:
            return arr
        mv = float(np.float32(self.missing_value)) if self.float32_inputs else float(self.missing_value)
        hit = arr == mv
        if not hit.any():
            return arr
        arr = np.array(arr, dtype=np.float64, copy=True)
        arr[hit] = np.nan
        return arr

    def with_missing_value(self, missing: float | None) -> "TreeEnsemble":
        """The same trees, reading inputs equal to ``missing`` as missing values."""
        from dataclasses import replace

        return replace(self, missing_value=None if missing is None or np.isnan(missing) else float(missing))

    def goes_left(self, x: np.ndarray, node: np.ndarray) -> np.ndarray:
        """Whether values ``x`` at nodes ``node`` (same shapes) go to the left child."""
        x = np.asarray(x, np.float64)
        node = np.asarray(node, np.int64)
        nan = np.isnan(x)
        with np.errstate(invalid="ignore"):
            out = np.where(nan, self.missing_go_left[node] == 1, x <= self.threshold[node])
        start = self.cat_start[node]
        ruled = start >= 0
        if not ruled.any():
            return out
        s = start[ruled]
        xs = x[ruled]
        k = self.cat_bits[s]
        flags = self.cat_bits[s + 1]
        miss = self.missing_go_left[node[ruled]] == 1
        is_cat = (flags & RULE_CATEGORICAL) != 0
        with np.errstate(invalid="ignore"):
            inside = ~np.isnan(xs) & (xs >= 0) & (xs < 64.0 * k)
            code = np.where(inside, xs, 0).astype(np.int64)
            word = self.cat_bits[np.where(inside, s + 2 + (code >> 6), 0)]
            in_set = inside & (((word >> (code & 63)) & 1) == 1)
            other = (flags & RULE_OTHER_LEFT) != 0
            cat_left = np.where(np.isnan(xs), miss, np.where(inside, in_set, other))
            zero = (flags & RULE_ZERO_MISSING) != 0
            num_left = np.where(np.isnan(xs) | (zero & (np.abs(xs) <= ZERO_MISSING_EPS)), miss,
                                xs <= self.threshold[node[ruled]])
        out = out.copy()
        out[ruled] = np.where(is_cat, cat_left, num_left)
        return out

    def apply(self, X) -> np.ndarray:
        """Global leaf index reached by each row in each tree.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_trees), dtype=int64
        """
        Xw = self.prepare_inputs(X)
        n = Xw.shape[0]
        node = np.broadcast_to(self.roots, (n, self.n_trees)).astype(np.int64)
        rows = np.arange(n)[:, None]
        # All trees advance together, one level per pass: at most max_depth passes.
        for _ in range(self.max_depth):
            internal = self.left[node] >= 0
            if not internal.any():
                break
            f = np.where(internal, self.feature[node], 0)
            x = Xw[np.broadcast_to(rows, node.shape), f]
            go_left = self.goes_left(x, node)
            child = np.where(go_left, self.left[node], self.right[node])
            node = np.where(internal, child, node)
        return node

    def predict_raw(self, X) -> np.ndarray:
        """Raw prediction ``base + scale * sum of leaf values``.

        Returns
        -------
        ndarray of shape (n_samples, n_raw)
        """
        from .walks import predict_block_rows

        n = X.shape[0] if getattr(X, "ndim", 0) >= 1 else len(X)
        if n <= PREDICT_CHUNK_ROWS or getattr(X, "ndim", 2) != 2:
            Xw = self._checked_inputs(X)
            return self.base[None, :] + self.scale * self.tree_sums(Xw, predict_block_rows(len(Xw)))
        # a large table in chunks: its inputs prepared a chunk at a time (a copy of every row
        # rounded through float32 would be two more tables of its size), the same sums
        out = np.empty((n, self.n_raw))
        block = predict_block_rows(PREDICT_CHUNK_ROWS)
        rows = X.iloc if hasattr(X, "iloc") else X
        for start in range(0, n, PREDICT_CHUNK_ROWS):
            stop = min(n, start + PREDICT_CHUNK_ROWS)
            out[start:stop] = self.tree_sums(self._checked_inputs(rows[start:stop]), block)
        out *= self.scale
        out += self.base[None, :]
        return out

    def _checked_inputs(self, X) -> np.ndarray:
        """:meth:`prepare_inputs`, refusing rows of another width than the model's."""
        Xw = self.prepare_inputs(X)
        if Xw.ndim != 2 or Xw.shape[1] != self.n_features:
            raise ValueError(f"expected rows of {self.n_features} columns, got shape {Xw.shape}")
        return Xw

    def tree_sums(self, Xw: np.ndarray, block: int) -> np.ndarray:
        """Unscaled tree sums of prepared rows (n, n_raw), in blocks of ``block`` rows: by the masks
        of :func:`~explainers.trees.mask_walk.mask_tree_sums_kernel` where every tree has at most 64
        leaves and no rule, else by the group walk (:func:`~explainers.trees.walks.tree_sums_kernel`);
        the same sums either way."""
        from .mask_walk import mask_tree_sums_kernel, predict_plan
        from .walks import rules_of, tree_sums_kernel

        nodes, thr = self.packed_nodes
        total = np.empty((len(Xw), self.n_raw))
        value = np.ascontiguousarray(self.value)
        plan = predict_plan(self)
        if plan[0]:
            mask_tree_sums_kernel(Xw, nodes, thr, self.missing_go_left, value, plan, block, total)
        else:
            tree_sums_kernel(Xw, nodes, thr, self.missing_go_left, *rules_of(self), value, self.roots,
                             self.max_depth, block, total)
        return total

    def transform_raw(self, raw: np.ndarray) -> np.ndarray:
        """Apply the output transform to raw predictions of shape (n, n_raw)."""
        raw = np.asarray(raw, dtype=np.float64)
        if self.transform == "identity":
            return raw
        if self.transform == "exp":
            return np.exp(raw)
        if self.transform == "sigmoid":
            from scipy.special import expit

            p = expit(raw[:, 0])
            return np.column_stack([1.0 - p, p])
        shifted = raw - raw.max(axis=1, keepdims=True)
        e = np.exp(shifted)
        return e / e.sum(axis=1, keepdims=True)

    def predict(self, X) -> np.ndarray:
        """The model's prediction: regression values or class probabilities.

        Returns
        -------
        ndarray of shape (n_samples, n_outputs)
        """
        return self.transform_raw(self.predict_raw(X))


#: rows :meth:`TreeEnsemble.predict_raw` prepares and walks at a time
PREDICT_CHUNK_ROWS = 65_536

#: bytes one node of a TreeEnsemble takes besides its leaf values (feature, threshold, children,
#: missing way, cover, rule start; and the walks' packed copy)
NODE_BYTES = 72


def structure_bytes(n_nodes: int, n_raw: int) -> int:
    """Memory the flattened trees of ``n_nodes`` nodes and ``n_raw`` outputs take: every node
    holds a value per output (a multiclass file's one-node trees too) besides its own fields."""
    return int(n_nodes) * (8 * max(1, int(n_raw)) + NODE_BYTES)


def check_structure(n_nodes: int, n_raw: int, label: str, rule_words: int = 0) -> None:
    """Refuse, before any array is built, trees whose flattened form would exceed ``model_bytes``:
    the cost is computed from the structure the file states (nodes x outputs, and the words of
    the categorical sets), not from its size."""
    from .. import limits
    from ..errors import InvalidModelError

    need = structure_bytes(n_nodes, n_raw) + 8 * int(rule_words)
    sets = f" and {int(rule_words):,} words of category sets" if rule_words else ""
    what = (f"{label}: its {int(n_nodes):,} tree nodes with {int(n_raw):,} output(s) each{sets} would take "
            f"{limits.fmt('model_bytes', need)} once read")
    if need > limits.limit("model_bytes"):
        raise InvalidModelError(f"{what}, {limits.over('model_bytes')}.")
    size = limits.file_bytes()
    ratio = limits.limit("model_expansion")
    if size is not None and need > max(limits.EXPANSION_FLOOR, ratio * size):
        raise InvalidModelError(
            f"{what}, {need / max(size, 1):,.0f} times the file's {limits.fmt('model_bytes', size)}: a model file may "
            f"state at most {ratio:,} times its size in trees past {limits.fmt('model_bytes', limits.EXPANSION_FLOOR)} "
            "(the operator can raise it with the environment variable GLASSBOX_MAX_MODEL_EXPANSION).")


def rule_record(flags: int, categories=()) -> np.ndarray:
    """One node rule as stored in ``cat_bits``: ``[k, flags, k words of the set]``.

    ``categories`` are the (non-negative integer) codes in the node's set.
    """
    from ..errors import InvalidModelError

    cats = np.asarray(list(categories), dtype=np.int64)
    if cats.size and (cats.min() < 0 or cats.max() >= MAX_CATEGORY_CODE):
        raise InvalidModelError(
            f"A categorical split lists the category code {int(cats.min() if cats.min() < 0 else cats.max())}; "
            f"codes must lie between 0 and {MAX_CATEGORY_CODE - 1}. The model file is damaged or not supported."
        )
    k = int(cats.max()) // 64 + 1 if cats.size else 0
    words = np.zeros(k, np.uint64)
    if cats.size:  # one vectorised pass: a set of 65,536 codes was a Python loop of that length per node
        np.bitwise_or.at(words, cats >> 6, np.left_shift(np.uint64(1), (cats & 63).astype(np.uint64)))
    return np.concatenate([np.asarray([k, flags], np.int64), words.view(np.int64)])


def codes_given(col, cats) -> bool:
    """Whether a categorical column's values are the category codes themselves: a plain
    numeric column (not a pandas category) for categories none of which is a number or
    reads as one ("1"), or that are the codes 0 .. k-1 themselves, as XGBoost and LightGBM
    read numbers in a categorical feature. Otherwise the values are labels, looked up in
    the categories."""
    import numbers

    import pandas as pd

    if isinstance(col.dtype, pd.CategoricalDtype) or not pd.api.types.is_numeric_dtype(col.dtype):
        return False
    if pd.api.types.is_bool_dtype(col.dtype):
        return False
    def numeric(c) -> bool:
        if isinstance(c, numbers.Number) and not isinstance(c, bool):
            return True
        try:
            float(str(c))
        except ValueError:
            return False
        return True

    if not any(numeric(c) for c in cats):
        return True
    # categories 0, 1, ..., k-1: a number names the same category as a label and as a code, and
    # the libraries read a fractional or negative one as a code (1.7 is category 1 in XGBoost)
    try:
        return [float(str(c)) for c in cats] == list(map(float, range(len(cats))))
    except ValueError:
        return False


def encode_categories(X, categories, numeric_codes: bool = False) -> np.ndarray:
    """A data frame as float64 codes: categorical columns as positions in their categories.

    Empty cells become NaN, values not among the categories -1 (the trees then
    route them as the model does with an unknown category); a number matches a
    category written as text ("1" for 1), except, with ``numeric_codes`` (an XGBoost
    or LightGBM model), in a numeric column for categories that are not numbers
    (:func:`codes_given`): its numbers are the codes, as those libraries read them;
    other columns must be numeric.
    """
    import pandas as pd

    cols = []
    for j, cats in enumerate(categories):
        col = X.iloc[:, j]
        if cats is None or numeric_codes and codes_given(col, cats):
            cols.append(pd.to_numeric(col, errors="raise").to_numpy(dtype=np.float64))
            continue
        lookup = {c: float(i) for i, c in enumerate(cats)}
        lookup.update({str(c): float(i) for i, c in enumerate(cats) if str(c) not in lookup})
        values = col.astype(object).to_numpy()
        missing = pd.isna(values)
        codes = np.array([np.nan if m else lookup.get(v, lookup.get(str(v), -1.0)) for v, m in zip(values, missing)],
                         dtype=np.float64)
        cols.append(codes)
    if not cols:
        return np.zeros((len(X), 0))
    return np.column_stack(cols)


def assemble(parts, tree_output, *, base, scale, transform, float32_inputs, n_features, model_name,
             categories=None, numeric_codes: bool = False, truncate_codes: bool = False) -> TreeEnsemble:
    """Join per-tree arrays into one :class:`TreeEnsemble`.

    ``parts`` holds one tuple per tree, as a reader produces it:
    ``(feature, threshold, left, right, missing_go_left, value, cover, max_depth)``
    with child indices local to the tree (-1 at leaves); they are offset here to
    global node indices. A ninth element, where present, maps a local node index
    to its rule record (:func:`rule_record`) for categorical and zero-as-missing
    splits. ``categories`` is the per-column tuple of category values (or None).

    A part whose depth is -1 has its structure checked here (proper binary
    trees, children and features in range, no shared nodes or cycles) and its
    depth computed from its children: every kernel sizes its walk stacks from
    that depth, so it is never read from a file.
    """
    if any(p[7] < 0 for p in parts):
        parts = _with_depths(parts, n_features, model_name)
    offsets = [0]
    for p in parts:
        offsets.append(offsets[-1] + len(p[0]))
    shift = np.repeat(np.asarray(offsets[:-1], np.int64), [len(p[0]) for p in parts])
    cat = lambda i: np.concatenate([p[i] for p in parts])  # noqa: E731
    left, right = cat(2), cat(3)
    left = np.where(left >= 0, left + shift, -1)
    right = np.where(right >= 0, right + shift, -1)
    cat_start = np.full(offsets[-1], -1, np.int64)
    records, used = [], 0
    for t, p in enumerate(parts):
        rules = p[8] if len(p) > 8 and p[8] else {}
        for local, record in sorted(rules.items()):
            cat_start[offsets[t] + int(local)] = used
            records.append(np.asarray(record).astype(np.int64, copy=False))
            used += len(records[-1])
    cat_bits = np.concatenate(records) if records else np.zeros(0, np.int64)
    return TreeEnsemble(
        feature=cat(0).astype(np.int32),
        threshold=cat(1),
        left=left.astype(np.int32),
        right=right.astype(np.int32),
        missing_go_left=cat(4).astype(np.uint8),
        value=np.ascontiguousarray(np.concatenate([p[5] for p in parts], axis=0)),
        cover=cat(6),
        node_offsets=np.asarray(offsets, dtype=np.int64),
        tree_output=np.asarray(tree_output, dtype=np.int64),
        base=np.asarray(base, dtype=np.float64).reshape(-1),
        scale=float(scale),
        transform=transform,
        float32_inputs=float32_inputs,
        n_features=n_features,
        max_depth=max(p[7] for p in parts),
        model_name=model_name,
        cat_start=cat_start,
        cat_bits=cat_bits,
        categories=tuple(categories) if categories is not None else None,
        numeric_codes=bool(numeric_codes),
        truncate_codes=bool(truncate_codes),
    )


def _with_depths(parts, n_features: int, name: str):
    """Check the trees' structure and put each tree's depth, computed from its children, in its part."""
    from .validate import check_trees

    offsets = np.concatenate([[0], np.cumsum([len(p[0]) for p in parts])])
    cat = lambda i: np.concatenate([p[i] for p in parts])  # noqa: E731
    depths = check_trees(
        cat(2), cat(3), offsets, feature=cat(0), n_features=n_features, threshold=cat(1),
        where=lambda t, node: f"{name}, tree {t}" + ("" if node is None else f", node {node}"),
    )
    return [p[:7] + (int(d),) + tuple(p[8:]) for p, d in zip(parts, depths)]
