"""The dashboard's state model (dashboard/state/session.py): control values under keys no widget
owns, bound to their widgets before they are drawn, and written to / read from the URL."""
from collections import Counter

import pytest
from streamlit.testing.v1 import AppTest

from dashboard.state import session

SAMPLES = {"str": "bmi", "int": 17, "float": 0.37, "bool": True, "list": ["age", "bmi"], "pair": (5, 95),
           "cell": (1, 0), "range": (0.1 + 0.2, 7.5)}


def test_a_range_is_two_numbers_or_categories():
    control = session.Control("k", "p", None, "range")
    for value in [(-1e-300, 3.0), (0.30000000000000004, 12345678.901234567), ["a", "b", "c"], ["only"], ["x", "y"]]:
        assert control.parse(control.format(value)) == value
    assert control.parse("1~x") == ["1", "x"] and control.parse("nan~1") == ["nan", "1"]


@pytest.mark.parametrize("key", sorted(session.CONTROLS))
def test_every_control_round_trips_through_its_url_text(key):
    control = session.CONTROLS[key]
    value = SAMPLES[control.kind]
    assert control.parse(control.format(value)) == value


@pytest.mark.parametrize("kind, text", [
    ("int", "abc"), ("int", "1.5"), ("int", ""), ("float", "nan"), ("float", "inf"), ("float", "x"),
    ("bool", "2"), ("bool", "true"), ("pair", "1~x"), ("pair", "1"), ("pair", "1~2~3"), ("cell", "a~b"),
    ("int", "²"), ("int", "٣"), ("int", "1" * 4301), ("int", "9" * 19), ("pair", "²~1"), ("cell", "1~" + "2" * 5000),
    ("float", "1e999"),
])
def test_unreadable_url_text_is_refused(kind, text):
    control = session.Control("k", "p", None, kind)
    assert control.parse(text) is None


def test_no_two_controls_of_a_link_share_a_parameter():
    """A link holds the sidebar's controls and one page's: a name used twice there would fill both."""
    pages = {c.page for c in session.CONTROLS.values()} - {None}
    for page in pages:
        params = Counter(c.param for c in session.CONTROLS.values() if c.page in (None, page))
        params.update(session.GLOBAL_PARAMS)
        assert [p for p, n in params.items() if n > 1] == [], page


def _app():
    import streamlit as st

    from dashboard.state import session

    opts = st.session_state.get("opts", ["a", "b", "c"])
    if st.session_state.get("show", True):
        st.selectbox("Feature", opts, **session.bind("f", opts[0], options=opts))
        st.number_input("Rows", 1, 50, **session.bind("n", 10, valid=lambda v: 1 <= v <= 50))
        st.multiselect("Mask", opts, **session.bind("m", [], options=opts))
    st.write(f"computed with {session.value('f')} {session.value('n')} {session.value('m')}")


def _shown(at) -> str:
    return [m.value for m in at.markdown][-1]


def test_a_value_survives_runs_that_do_not_draw_its_widget():
    at = AppTest.from_function(_app).run()
    at.selectbox[0].set_value("c").run()
    at.number_input[0].set_value(33).run()
    at.multiselect[0].set_value(["b", "c"]).run()
    at.session_state["show"] = False  # another page: Streamlit drops the widgets' own keys
    at.run()
    assert "f" not in at.session_state and _shown(at) == "computed with c 33 ['b', 'c']"
    at.session_state["show"] = True
    at.run()
    assert not at.exception
    assert (at.selectbox[0].value, at.number_input[0].value, at.multiselect[0].value) == ("c", 33, ["b", "c"])
    assert _shown(at) == "computed with c 33 ['b', 'c']"


def test_a_value_the_options_no_longer_hold_falls_back_to_the_default():
    at = AppTest.from_function(_app).run()
    at.selectbox[0].set_value("c").run()
    at.multiselect[0].set_value(["a", "c"]).run()
    at.session_state["opts"] = ["a", "b"]  # another model: "c" is not one of its features
    at.run()
    assert not at.exception
    assert at.selectbox[0].value == "a" and at.multiselect[0].value == ["a"]
    assert _shown(at) == "computed with a 10 ['a']"


def test_set_value_changes_what_the_box_shows():
    at = AppTest.from_function(_app).run()
    at.session_state["v::n"] = 7  # as a callback's set_value leaves it
    at.session_state["n"] = 7
    at.run()
    assert at.number_input[0].value == 7 and _shown(at) == "computed with a 7 []"


def _url_app():
    import streamlit as st

    from dashboard.state import session

    page = st.session_state.get("page", "effects")
    session.read_url(page, lambda key: key == "wine_gb")
    session.begin_run(page)
    if page == "effects":
        st.selectbox("Feature", ["age", "bmi"], **session.bind("pdp_f1", "age", options=["age", "bmi"]))
    else:
        st.number_input("Row", 0, 99, **session.bind("shap_row", 0, valid=lambda v: 0 <= v <= 99))


def test_the_url_holds_the_page_s_controls_only_when_they_differ_from_the_default():
    at = AppTest.from_function(_url_app).run()
    assert "feature" not in at.query_params
    at.selectbox[0].set_value("bmi").run()
    assert at.query_params["feature"] == "bmi"
    at.session_state["page"] = "attribution"  # another page: the first page's parameters leave the URL
    at.run()
    assert "feature" not in at.query_params and "row" not in at.query_params
    at.number_input[0].set_value(12).run()
    assert at.query_params["row"] == "12"


def test_a_link_fills_its_page_s_controls_once_and_ignores_what_it_cannot_read():
    at = AppTest.from_function(_url_app)
    at.query_params["feature"] = "bmi"
    at.query_params["row"] = "not a number"
    at.session_state["page"] = "effects"
    at.run()
    assert at.selectbox[0].value == "bmi"
    at.session_state["page"] = "attribution"
    at.run()
    assert at.number_input[0].value == 0  # the unreadable row: the default
    # a stale link: a feature the model lacks falls back to the default, without an error
    at = AppTest.from_function(_url_app)
    at.query_params["feature"] = "nope"
    at.run()
    assert not at.exception and at.selectbox[0].value == "age"


@pytest.mark.parametrize("row", ["²", "7" * 4301, "", "-"])
def test_a_link_value_no_control_takes_is_a_notice_not_an_error_page(row):
    """``?row=²`` or 4,301 digits broke the first load of the link (and every reload)."""
    from tests.views._app import open_page

    at = open_page(query={"model": "diabetes_forest", "row": row})  # the link lands, then the SHAP page
    assert not at.exception, at.exception
    notes = [i.value for i in at.info if "could not be read" in i.value]
    assert notes and "“row”" in notes[0], [i.value for i in at.info]
    at.switch_page("views/shap.py").run()
    assert not at.exception, at.exception
    assert at.number_input(key="shap_row").value == 0  # the default stands
    assert not any("could not be read" in i.value for i in at.info)  # said once
