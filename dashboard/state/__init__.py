"""Session state and cached calls, keyed by model and data fingerprints.

Pages never compute: they ask :func:`current` for the active model context and
call the cached functions re-exported here (``state.pdp(...)``). Where things live:

- :mod:`.session`: session-state and widget keys, page widgets kept across pages,
  URL query parameters, the operator's trust flag and batch folders, the class pick,
  valid choices
- :mod:`.context`: :class:`ModelContext`, loading demos and uploads, model options,
  the Model page's callbacks and summaries, exceptions turned into messages
- :mod:`.cache`: :class:`ResultCache` and the one process-wide :func:`result_cache`
- :mod:`.compute`: the cached computations the pages call (PDP/ALE, SHAP,
  precomputed batch runs inside the operator's folders, importance, the report)
  and the progress bar

User text reaches the page through :mod:`dashboard.safe_text` (``md`` for Markdown,
``plot`` for figures, ``csv_text`` for downloads); the server settings are checked by
:mod:`dashboard.server` before anything else runs.
- :mod:`.interactions`: the Interactions page's cached calls (SHAP interactions, H)
- :mod:`.quality`: the Quality page's cached calls, its threshold (URL, What-if verdict), rows listed
- :mod:`.warmup`: compiling the numba kernels in the background, once per process

Module-level state (``cache._RESULTS``, ``warmup._WARM``) lives in its submodule;
patch it there, not here.
"""
from .cache import ResultCache, result_cache
from .compute import (
    BATCH_REFUSED,
    IMPORTANCE_METHODS,
    PDP_MAX_ROWS,
    SHAP_METHODS,
    ProgressBar,
    additivity_line,
    ale,
    background,
    batch_folder,
    SLOW_VIEW_S,
    category_options,
    comparison,
    empty_cells_caption,
    empty_cells_toggle,
    explain_edited,
    explain_row,
    explain_sample,
    fmt_seconds,
    importance_cost,
    predict_seconds_per_row,
    sample_cost,
    importance,
    importances,
    output_label,
    pdp,
    precomputed_attributions,
    report_html,
    row_table,
    sample_rows,
    shap_is_fast,
    split_rows,
)
from .context import (
    ModelContext,
    current,
    data_score,
    demo_cards,
    demo_context,
    error_message,
    feature_summary,
    load_data_cached,
    load_model_cached,
    load_upload,
    model_options,
    on_load_upload,
    on_pick_demo,
    show_error,
)
from .session import (
    ACTIVE,
    BATCH_ROOT_FLAG,
    BATCH_ROOTS_ENV,
    CLASS_INDEX,
    DATA_FILE,
    DEFAULT_DEMO,
    DEMO_PICK,
    LAST_ERROR,
    MODEL_FILE,
    NO_TARGET,
    PAGE_KEY_PREFIXES,
    TARGET_COL,
    TRUST_ENV,
    TRUST_FLAG,
    UPLOAD,
    UPLOADED,
    URL_KEYS,
    apply_url,
    batch_roots,
    class_index,
    init_session,
    keep_page_widgets,
    pdp_class,
    pickles_trusted,
    quiet_restored_widgets,
    shap_class,
    share_in_url,
    valid_choice,
    valid_choices,
)
from .interactions import (
    interaction_error,
    interaction_method,
    shap_interactions,
    strongest_partner,
)
from .interactions import report_section as interactions_report_section
from .quality import model_quality, quality_problem
from .quality import threshold as quality_threshold
from .warmup import warm_kernels_in_background
from .segments import (  # noqa: E402
    NO_SEGMENT,
    SEGMENT_ON,
    SEGMENTS,
    ActiveSegment,
    active_segment,
    add_segment,
    remove_segment,
    saved_segments,
    segment_mask,
    segment_picker,
    segments_from_url,
    segments_to_url,
)
