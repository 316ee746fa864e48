"""Session state and cached calls, keyed by model and data fingerprints.

Pages never compute: they ask :func:`current` for the active model context and
call the cached functions re-exported here (``state.pdp(...)``). Nothing here draws on
the page: shared elements (error box, running indicator, pickers) are in
:mod:`dashboard.widgets`. Where things live, lower layers first (no module imports one
that imports it back; ``tests/test_layout.py`` checks):

- :mod:`.cache`: :class:`ResultCache` and the one process-wide :func:`result_cache`
- :mod:`.session`: the one state model: every control's value kept under a key no widget
  owns, bound to its widget before it is drawn (:func:`bind`), mirrored in the URL
- :mod:`.operator`: what the operator allowed at start (pickles, batch folders)
- :mod:`.outputs`: the sidebar's class or output, as each page's figures take it
- :mod:`.context`: :class:`ModelContext`, loading demos and uploads, model options,
  the Model page's summaries, exceptions turned into messages
- :mod:`.uploads`: the Model page's uploads (files kept across pages, loading them) and shared
  uploads (the workspace store behind ``?ws=`` links)
- :mod:`.worker`: a computation in a worker thread the page waits on; the progress bar
- :mod:`.rows`: training/held-out split, seeded samples, SHAP background, per-row SHAP store
- :mod:`.costs`: seconds per row (predict, SHAP) probed once; a view's estimated cost
- :mod:`.columns`: a categorical column's values for a picker, in the model's order
- :mod:`.effects`: PDP page (partial dependence and ICE, ALE, PDP by segment)
- :mod:`.attribution`: SHAP page (one row, a sample, a sample by segment, the row table)
- :mod:`.batch_runs`: precomputed batch runs inside the operator's folders
- :mod:`.whatif`: What-if page (an edited row, its SHAP values, its verdict)
- :mod:`.importance`: Importance page (methods, results, comparison, by segment)
- :mod:`.interactions`: Interactions page (SHAP interactions, H, their cost)
- :mod:`.quality`: Quality page, its threshold (URL, What-if verdict), rows listed
- :mod:`.segments`, :mod:`.segment_views`: the session's segments; the Segments page
- :mod:`.report`: Report page (the HTML report)
- :mod:`.warmup`: compiling the numba kernels in the background, once per process

User text reaches the page through :mod:`dashboard.safe_text` (``md`` for Markdown,
``plot`` for figures, ``csv_text`` for downloads); the server settings are checked by
:mod:`dashboard.server` before anything else runs.

Module-level state (``cache._RESULTS``, ``warmup._WARM``, ``worker._RUNNING``) lives in its
submodule; patch it where it is looked up (``costs.predict_seconds_per_row``), not here.
"""
from .cache import ResultCache, result_cache
from .operator import BATCH_ROOT_FLAG, BATCH_ROOTS_ENV, TRUST_ENV, TRUST_FLAG, batch_roots, pickles_trusted
from .outputs import (LOG_ODDS, MODEL_SCALE, NO_TRANSFORM, ORIGINAL, PROBABILITY, SCALES, default_transform, effects_model, follow_model,
                      target_name, target_transform, transform_choices, transformed_name, output_scale, scale_choices, scale_key,
                      NO_TARGET_OUTPUT, class_index, default_target_output, margin_caption, one_margin, output_choices,
                      pdp_class, picker_label, shap_class, target_output, target_output_choices)
from .uploads import on_load_upload, on_pick_demo
from .attribution import (
    SHAP_METHODS,
    shap_setting,
    additivity_line,
    explain_row,
    explain_sample,
    output_label,
    row_errors_listed,
    row_table,
)
from .counterfactuals import predicted_label
from .batch_runs import BATCH_REFUSED, batch_folder, precomputed_attributions
from .columns import category_options
from .costs import (
    SLOW_VIEW_S,
    START_VIEW_S,
    fmt_seconds,
    predict_seconds_per_row,
    default_shap_rows,
    sample_cost,
    shap_is_fast,
)
from .effects import (ALE_MAX_ROWS, PDP_MAX_ROWS, ale, ale_caption, ale_rows, ale_sampled, pdp, pdp_every_row,
                      pdp_every_row_seconds)
from .predictions import all_labels, all_predictions, data_score
from .importance import IMPORTANCE_METHODS, comparison, default_importance_rows, importance, importance_cost, importances
from .report import report_html
from .rows import background, sample_rows, split_rows
from .whatif import explain_edited
from .worker import ProgressBar
from .context import (
    context_for,
    ModelContext,
    current,
    demo_cards,
    default_model,
    demo_context,
    is_known_model,
    error_message,
    feature_summary,
    load_data_cached,
    load_model_cached,
    load_upload,
    model_options,
)
from .session import (
    ACTIVE,
    CLASS_INDEX,
    SCALE,
    CLASS_NAMES,
    TARGET_TRANSFORM,
    TARGET_OUTPUT,
    DATA_FILE,
    DEFAULT_DEMO,
    DEMO_PICK,
    LAST_ERROR,
    MODEL_FILE,
    NO_TARGET,
    TARGET_COL,
    UPLOAD,
    UPLOADED,
    init_session,
    CONTROLS,
    active_model,
    begin_run,
    bind,
    forget,
    keep_in_url,
    read_url,
    set_active_model,
    set_value,
    take_url_problem,
    value,
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
    segments_from_url,
    segments_to_url,
)
