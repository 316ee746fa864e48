"""The Report page's cached computation: the HTML report, built once per choice of parts,
with the session's segments added on every call.
"""
from __future__ import annotations

from .attribution import additivity_line, explain_row
from .cache import result_cache
from .context import ModelContext, error_message, feature_summary
from .effects import pdp
from .importance import comparison, importance_methods, importances, left_out_notices
from .outputs import pdp_class, shap_class


def report_html(ctx: ModelContext, feature: str, row: int, wanted: tuple[bool, ...], bar):
    """The report, built once per choice: a :class:`dashboard.report.Built` (the HTML document,
    an outline of its parts for the page's preview, and a notice for every ticked part left out).

    ``wanted`` says which parts to include: summary, PDP/ICE, SHAP waterfall,
    importance comparison and, if given, feature interactions and model quality. ``row`` is the row's position in the data as loaded.
    """
    ci = pdp_class(ctx)
    from .importance import permutation_scoring

    from .outputs import scale_key
    from .quality import threshold

    # what the parts read from the other pages: the scale, the Quality threshold, mean |SHAP| on or off
    key = ("report", ctx.model_key, ctx.data_key, feature, row, ci, wanted, permutation_scoring(ctx),
           scale_key(ctx), threshold(), _with_shap(ctx))
    built = result_cache().get_or_compute(key, lambda: _build_report(ctx, feature, row, wanted, ci, bar))
    return _with_segments(ctx, built, wanted)


def _with_segments(ctx: ModelContext, built, wanted):
    """The report with the session's segments added (unless nothing is ticked): outside the
    report's cache key, since segments are added and removed without its choices changing."""
    from dashboard import report

    from .compare import report_sections as compare_sections
    from .counterfactuals import report_section as cf_section
    from .segment_views import report_section

    if not any(wanted):
        return built
    sections, notices = [], []
    for what, make in (("Segments", lambda: [report_section(ctx)]),
                       ("The model comparison", lambda: compare_sections(ctx)),
                       ("The counterfactuals", lambda: [cf_section(ctx)])):
        try:
            sections += [sec for sec in make() if sec is not None]
        except Exception as exc:
            notices.append(f"{what} left out: {error_message(exc)}")
    if notices:
        built = report.Built(built.html, built.outline, built.notices + tuple(notices), built.n_sections)
    return report.add_sections(built, sections)


def _build_report(ctx: ModelContext, feature: str, row: int, wanted, ci, bar):
    """Every ticked part either goes in or gets a notice saying why it was left out."""
    from dashboard import figures, report

    want_summary, want_pdp, want_shap, want_imp, *rest = wanted
    want_inter = bool(rest and rest[0])
    want_quality = bool(len(rest) > 1 and rest[1])
    sections, notices = [], []
    summary = _report_summary(ctx) if want_summary else {}
    if want_summary:
        sections.append(report.Section("Features", "Types, ranges and missing values of the data.",
                                       table=feature_summary(ctx.data_key, ctx.X).set_index("feature")))
    if want_quality:
        from .quality import quality_problem, report_section as quality_section

        try:
            sec = quality_section(ctx)
            sections += [sec] if sec is not None else []
            if sec is None:
                notices.append(f"Model quality left out: {quality_problem(ctx)}")
        except Exception as exc:
            notices.append(f"Model quality left out: {error_message(exc)}")
    bar.progress(0.25, text="Partial dependence…")
    if want_pdp:
        try:
            fig = figures.pdp_figure(pdp(ctx, (feature,), 40, (0.05, 0.95)), class_index=ci)
            sections.append(report.Section(f"Partial dependence and ICE: {feature}", _pdp_caption(fig), figure=fig))
        except Exception as exc:
            notices.append(f"Partial dependence of {feature} left out: {error_message(exc)}")
    bar.progress(0.5, text="SHAP…")
    if want_shap:
        try:
            sres = explain_row(ctx, row, "auto", ())
            sci = shap_class(sres, ctx)
            if sres.params.get("scale_note"):  # another scale than the sidebar's: the report says why too
                notices.append(f"SHAP waterfall of row {row}: {sres.params['scale_note']}".replace("**", ""))
            sections.append(report.Section(
                f"Why row {row} gets its prediction",
                f"Row {row} of the data (0 is the first row): {additivity_line(sres, 0, sci)}",
                figure=figures.waterfall_figure(sres, 0, class_index=sci, max_display=12, row_label=row)))
        except Exception as exc:
            notices.append(f"SHAP waterfall of row {row} left out: {error_message(exc)}")
    bar.progress(0.75, text="Importance…")
    if want_imp:
        imp_sections, imp_notices = _importance_sections(ctx, bar)
        sections += imp_sections
        notices += imp_notices
    if want_inter:
        from .interactions import plain_reason, report_section

        bar.progress(0.9, text="Interactions…")
        try:
            sections.append(report_section(ctx))
        except Exception as exc:
            notices.append(f"Feature interactions left out: {plain_reason(exc) or error_message(exc)}")
    if not any(wanted):
        notices.append("Nothing is ticked: the report holds its title only.")
    html_doc = report.build_report(f"Glassbox — {ctx.title}", summary, sections, notices=notices)
    outline = [("Model summary", f"Key facts at the top: {', '.join(map(str, summary))}.")] if want_summary else []
    outline += [(sec.heading, sec.caption) for sec in sections]
    return report.Built(html_doc, tuple(outline), tuple(notices), len(sections))


def _pdp_caption(fig) -> str:
    """What the report's PDP figure draws, read from its traces (level marks or a line, ICE lines or dots)."""
    import re

    # a categorical feature's PD: a level mark per category (a bar in a segment comparison)
    levels = any(t.type == "bar" or (t.name == "partial dependence" and getattr(t, "mode", None) == "markers")
                 for t in fig.data)
    ice = [t for t in fig.data if getattr(t, "legendgroup", None) == "ice"]
    count = next((m.group(1) for t in ice if (m := re.search(r"\((\d[\d,]* of [\d,]+ rows)\)", t.name or ""))), None)
    ice_rows = f" (ICE, {count})" if count else " (ICE)"
    if levels:
        text = ("Each bold mark is the average prediction with every row set to that category (partial "
                "dependence).")
        if ice:
            text += f" Each dot is one row's prediction at that category{ice_rows}."
        return text
    text = "The bold line is the average prediction as the feature moves (partial dependence)."
    if ice:
        text += f" Each thin line is one row{ice_rows}."
    if any(t.name == "deciles of the data" for t in fig.data):
        text += " Ticks along the x axis mark the deciles of the data."
    return text


def _importance_sections(ctx: ModelContext, bar) -> tuple[list, list[str]]:
    """The report's importance sections (methods compared when two or more apply) and notices.

    Never silent: every method left out, and every row left out for an empty
    target, gets a notice.
    """
    from dashboard import figures, report

    results, skipped = importances(ctx, importance_methods(ctx, with_shap=_with_shap(ctx)), 5, 1_000, bar,
                                   page="report")
    why = "; ".join(f"{label}: {reason}" for label, reason in skipped)
    if not results:
        if ctx.y is None:
            return [], ["Importance comparison needs the target column: pick it on the Model page. "
                        f"Left out ({why})."]
        return [], [f"Importance comparison left out: no importance method applies to this model and data ({why})."]
    notices = left_out_notices(results)
    if len(results) == 1:
        if ctx.y is None:
            notices.append("Importance comparison needs the target column: pick it on the Model page. "
                           f"Without it the report shows {results[0].label} alone ({why}).")
        else:
            notices.append(f"Importance comparison shows {results[0].label} alone: the other methods do not "
                           f"apply ({why}).")
    else:
        if skipped:
            notices.append(f"Left out of the importance comparison: {why.rstrip('.')}.")
        try:
            comp = comparison(ctx.model_key, ctx.data_key, tuple(r.label for r in results), results, ctx.X)
            return [report.Section("Variable importance, compared",
                                   " ".join(f"{r.label}: {r.description}" for r in results),
                                   figure=figures.importance_bars_figure(comp))], notices
        except Exception as exc:  # e.g. MDI of a Pipeline names the encoded columns, not the data's
            notices.append(f"The importance methods cannot be compared side by side ({error_message(exc)}); "
                           "the report shows each on its own.")
    return [report.Section(f"Variable importance: {r.label}", r.description, figure=figures.importance_bars_figure(r))
            for r in results], notices


def _with_shap(ctx: ModelContext) -> bool:
    """Whether the importance section holds mean |SHAP|: as the Importance page's switch says
    (on by default where SHAP is fast)."""
    from .costs import shap_is_fast
    from .session import value

    return bool(value("imp_shap", shap_is_fast(ctx)))


def _report_summary(ctx: ModelContext) -> dict:
    """The report's key facts about the model and data."""
    summary = {"Model": ctx.card.get("model_type", ""), "Task": ctx.task, "Rows": f"{len(ctx.X):,}",
               "Features": ctx.X.shape[1]}
    if ctx.classes:
        summary["Classes"] = ", ".join(ctx.classes)
    if ctx.card.get("metric"):
        summary[ctx.card["metric"]["name"]] = f"{ctx.card['metric']['value']:.3f}"
    return summary
