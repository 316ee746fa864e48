"""Batch explanations of large files: chunked, resumable, parallel on loky or Dask.

The dashboard explores a sample; this package explains every row of a CSV or
Parquet file (or a directory of Parquet parts) without ever holding the whole
table in memory:

* The input is streamed with pyarrow in chunks of ``chunk_rows`` rows.
* Each chunk is one joblib task. A worker loads the model from its file once
  (cached per worker process), explains the chunk and writes its own part file
  atomically (a temporary file renamed into place), so the parent process only
  ever holds the few chunks in flight (``2 * n_jobs``) and never the results.
* ``OUT/_manifest.json`` records the model and data fingerprints, every
  option that changes the numbers and a run id (random per run), which every
  part carries in its metadata. Rerunning the same command after an
  interruption keeps the run id, skips the finished parts and computes the
  rest: nothing is lost or duplicated. A different model, data file or option
  is refused unless ``overwrite=True``, which deletes only the files the
  previous run wrote (never files that merely look like ours).
* One run at a time writes to a folder: a run holds ``flock`` on
  ``OUT/_batch.lock`` (released by the kernel if it dies), and a second run
  fails at once, naming the first. Workers (loky or a Dask LocalCluster) end
  within a second of a killed run.
* Rows are explained in blocks of ``block_rows`` aligned on absolute row
  positions, with one BLAS thread, from a background drawn once from the whole
  file and stored in ``OUT/_background.parquet``. The numbers therefore do not
  depend on the backend, the number of workers, or ``chunk_rows`` (any multiple
  of ``block_rows``): they are equal bit for bit.

The output directory reads as one Parquet dataset (``pandas.read_parquet(OUT)``;
files starting with ``_`` or ``.`` are skipped by pyarrow): one row per input
row, in input order, with the columns ``row``, ``shap_<feature>`` (or
``shap_<feature>__<class>`` for several outputs), ``base_value`` and
``prediction`` (likewise per class).

While a run is not finished, ``OUT/INCOMPLETE.txt`` (not Parquet) makes such
readers fail rather than take some parts for the whole.

:func:`importance_file` computes holdout permutation importance the same way
(the shuffles stay within each chunk), and :func:`load_attributions` opens a
finished run as a :class:`~explainers.shap.ShapResult` on a sample of its rows,
for the dashboard's global views. The readers (:func:`load_attributions`,
:func:`load_importance`, :func:`load_background`) refuse a folder that is not
one complete run: unfinished, a part missing, a part of another run, or files
it did not write among its parts.

The modules, by concern:

- :mod:`.options`: the defaults, the accepted values and the argument checks both runs share;
- :mod:`.sources`: the inputs: the model file; the data file opened, hashed, matched to the
  model's columns and streamed in chunks; the background sample;
- :mod:`.manifest`: the output directory: the manifest, part names, atomic writes, which
  files are a run's, resuming (which parts are done, whether an existing output matches
  the run) and checking a finished output;
- :mod:`.lock`: one run at a time per output directory;
- :mod:`.backends`: the loky and Dask backends, the workers' warm-up, and loky workers
  that exit with their run;
- :mod:`.run`: the chunk loop: what each task carries, what a worker does with a chunk, progress;
- :mod:`.explain`: :func:`explain_file`, SHAP over a file;
- :mod:`.importance_run`: :func:`importance_file`, combining the chunks' scores,
  :func:`load_importance`;
- :mod:`.results`: :func:`load_attributions` and :func:`load_background`.

The command line over them is ``python -m explainers`` (:mod:`explainers.__main__`).
"""
from .explain import explain_file
from .importance_run import importance_file, load_importance
from .options import BATCH_METHODS, BATCH_SCORING, DEFAULT_BLOCK_ROWS, DEFAULT_CHUNK_ROWS
from .results import load_attributions, load_background
from .run import BatchProgress, BatchReport

# public outside __all__, imported from here by the CLI and the dashboard
from .lock import LOCK  # noqa: F401
from .manifest import BACKGROUND, FORMAT, FORMAT_VERSION, IMPORTANCE_CSV, INCOMPLETE, MANIFEST  # noqa: F401
from .options import TREE_MODES  # noqa: F401
from .run import ProgressCallback  # noqa: F401

__all__ = [
    "explain_file",
    "importance_file",
    "load_attributions",
    "load_importance",
    "load_background",
    "BatchReport",
    "BatchProgress",
    "DEFAULT_CHUNK_ROWS",
    "DEFAULT_BLOCK_ROWS",
    "BATCH_METHODS",
    "BATCH_SCORING",
]
