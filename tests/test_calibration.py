"""`sparring calibrate`: the judge measured against labelled cases (agreement, Cohen's kappa,
confusion per criterion, self-agreement over repeats, the cases it got wrong)."""

from __future__ import annotations

import collections
import json
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

from sparring.cli.main import main
from sparring.errors import ConfigError
from sparring.judging.calibration import (
    CaseResult,
    Label,
    LabelledCase,
    calibrate,
    cohen_kappa,
)
from sparring.loaders.labels import read_labels
from sparring.models.base import ChatMessage
from sparring.models.registry import PROVIDERS, register_provider
from sparring.models.scripted import ScriptedModel
from sparring.results import Verdict, VerdictStatus
from sparring.transcript import Message, Transcript
from tests.support.judging import agent_quote

EXAMPLE = Path(__file__).parents[1] / "examples" / "calibration" / "labels.jsonl"


def case_line(label: str, reply: str, **extra: Any) -> str:
    body: dict[str, Any] = {
        "criterion": "The assistant offers a refund",
        "label": label,
        "transcript": [
            {"role": "user", "content": "My order is late"},
            {"role": "assistant", "content": reply},
        ],
    }
    return json.dumps(body | extra)


def by_refund(messages: Sequence[ChatMessage], schema: dict[str, Any] | None) -> dict[str, Any]:
    """A judge that says `met` exactly when the agent's last message mentions a refund."""
    props = (schema or {}).get("properties", {})
    quote = agent_quote(messages)
    status = "met" if "refund" in quote.lower() else "not_met"
    return {
        "verdicts": {
            i: {"verdict": status, "reason": f"judged {status}", "evidence": [quote], "turns": [1]}
            for i in props["verdicts"]["required"]
        },
        "replies": {t: {"note": "noted", "score": 1} for t in props["replies"]["required"]},
    }


def verdict(status: VerdictStatus) -> Verdict:
    return Verdict(id="criterion", kind="criterion", description="x", status=status)


def case(label: Label = "met", criterion_id: str = "c") -> LabelledCase:
    chat = Transcript(
        messages=(Message(role="user", content="hi"), Message(role="agent", content="hello"))
    )
    return LabelledCase(
        id="x", transcript=chat, kind="criterion", text="t", label=label, criterion_id=criterion_id
    )


# --- the maths ------------------------------------------------------------------------


def test_cohens_kappa_matches_the_hand_computed_value() -> None:
    # 5 both met, 1 person met / judge not, 1 person not / judge met, 3 both not_met:
    # p_o = 8/10 = 0.8; each rater says met 6 times: p_e = (6*6 + 4*4) / 100 = 0.52;
    # kappa = (0.8 - 0.52) / (1 - 0.52) = 0.28 / 0.48 = 0.58333...
    pairs = [("met", "met")] * 5 + [("met", "not_met"), ("not_met", "met")]
    pairs += [("not_met", "not_met")] * 3
    kappa = cohen_kappa(pairs)
    assert kappa == pytest.approx(0.28 / 0.48)
    assert cohen_kappa([("met", "not_met"), ("not_met", "met")]) == pytest.approx(-1.0)
    assert cohen_kappa([("met", "met")] * 4) is None  # one label only: undefined
    assert cohen_kappa([]) is None


def test_a_cases_label_is_its_majority_and_a_tie_goes_to_the_worse() -> None:
    assert CaseResult(case(), (verdict("met"), verdict("met"), verdict("not_met"))).judge_label == (
        "met"
    )
    tie = CaseResult(case(), (verdict("met"), verdict("not_met")))
    assert tie.judge_label == "not_met" and tie.self_agreement == 0.5 and not tie.correct
    broken = CaseResult(case(), (verdict("met"), verdict("error")))
    assert broken.judge_label == "error" and not broken.correct  # an error never agrees


@pytest.mark.anyio
async def test_calibrate_grades_each_case_with_the_runs_judge_call() -> None:
    samples: list[tuple[Label, str]] = [
        ("met", "I can refund it."),
        ("met", "Sorry about that."),  # the judge misses it
        ("not_met", "Let me check."),
        ("not_met", "A refund is on its way."),  # the judge is fooled
    ]
    cases = [
        LabelledCase(
            id=f"k{n}",
            transcript=Transcript(
                messages=(
                    Message(role="user", content="My order is late"),
                    Message(role="agent", content=reply),
                )
            ),
            kind="criterion",
            text="The assistant offers a refund",
            label=label,
            criterion_id="refund" if n < 3 else "other",
        )
        for n, (label, reply) in enumerate(samples)
    ]
    model = ScriptedModel(handler=by_refund)
    done = await calibrate(model, cases, repeat=2)
    assert len(model.calls) == 8
    assert "The assistant offers a refund" in str(model.calls[0][0])
    assert [r.case.id for r in done.wrong] == ["k1", "k3"]
    assert done.overall.agreement == 0.5 and done.self_agreement == 1.0
    refund, other = done.by_criterion
    assert (refund.name, refund.count("met", "met"), refund.count("met", "not_met")) == (
        "refund",
        1,
        1,
    )
    assert refund.count("not_met", "not_met") == 1 and other.count("not_met", "met") == 1


@pytest.mark.anyio
async def test_a_should_case_is_judged_on_the_reply_at_its_turn(tmp_path: Path) -> None:
    labels = tmp_path / "labels.jsonl"
    line = {
        "should": "offer a refund",
        "label": "met",
        "transcript": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "Hello!"},
            {"role": "user", "content": "My order is late"},
            {"role": "assistant", "content": "I will refund it."},
        ],
    }
    labels.write_text(json.dumps(line) + "\n")
    (read,) = read_labels(labels)
    assert (read.kind, read.turn, read.id, read.criterion_id) == (
        "should",
        2,
        "line-1",
        "should offer a refund",
    )
    model = ScriptedModel(handler=by_refund)
    done = await calibrate(model, [read])
    assert done.results[0].answers[0].id == "t2.should1" and done.results[0].correct


# --- the labels file ------------------------------------------------------------------


def test_bad_lines_are_reported_at_their_line_all_at_once(tmp_path: Path) -> None:
    labels = tmp_path / "labels.jsonl"
    lines = [
        case_line("met", "I can refund it.", id="a"),
        "{not json",
        case_line("pass", "ok"),
        case_line("met", "ok", critrion_id="x"),
        case_line("met", "ok", id="a"),
        case_line("met", "ok", should="greet"),
        "",
        json.dumps({"criterion": "x", "label": "met", "transcript": [{"role": "user"}]}),
    ]
    labels.write_text("\n".join(lines) + "\n")
    with pytest.raises(ConfigError) as caught:
        read_labels(labels)
    assert str(caught.value).splitlines() == [
        f"{labels}:2: not JSON (Expecting property name enclosed in double quotes at column "
        "2); write one JSON object per line",
        f'{labels}:3: `label` must be "met" or "not_met", got "pass"',
        f"{labels}:4: unknown key 'critrion_id'; did you mean 'criterion_id'?",
        f"{labels}:5: case id 'a' is also used on line 1: rename one",
        f"{labels}:6: give exactly one of `criterion`, `restriction` (about the whole "
        "conversation) and `should` (about one reply), not several",
        f"{labels}:8: `transcript` needs at least one user message and one agent message",
    ]


def test_the_shipped_example_reads_with_both_labels_and_two_criteria() -> None:
    cases = read_labels(EXAMPLE)
    assert len(cases) >= 20
    assert {c.label for c in cases} == {"met", "not_met"}
    assert {c.criterion_id for c in cases} == {"follows_instruction", "task_done"}
    assert any(m.tool_calls for c in cases for m in c.transcript.messages)


# --- the command ----------------------------------------------------------------------


def _judge(name: str) -> ScriptedModel:
    """`refund` (met when the reply mentions a refund) or `alternate` (each case met, then
    not_met)."""
    if name == "refund":
        return ScriptedModel(handler=by_refund, name="scripted:refund")
    if name == "garbage":
        return ScriptedModel(handler=lambda messages, schema: "no idea", name="scripted:garbage")
    calls: collections.Counter[str] = collections.Counter()

    def alternate(messages: Sequence[ChatMessage], schema: dict[str, Any] | None) -> Any:
        # Counted per case (its prompt), so the order calls run in at once cannot matter.
        answer = by_refund(messages, schema)
        prompt = messages[-1]["content"]
        flip = calls[prompt] % 2 == 1
        calls[prompt] += 1
        for item in answer["verdicts"].values():
            item["verdict"] = "not_met" if flip else "met"
        return answer

    return ScriptedModel(handler=alternate, name=f"scripted:{name}")


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "labels.jsonl").write_text(
        "\n".join(
            [
                case_line("met", "I can refund it.", id="good"),
                case_line("met", "Sorry about that.", id="missed"),
                case_line("not_met", "Let me check.", id="fine"),
            ]
        )
        + "\n"
    )
    monkeypatch.chdir(tmp_path)
    for key in ("SPARRING_MODEL", "SPARRING_JUDGE_MODEL"):
        monkeypatch.delenv(key, raising=False)
    register_provider("scripted", lambda spec, name, options: _judge(name))
    yield tmp_path
    PROVIDERS.pop("scripted", None)


def sparring(monkeypatch: pytest.MonkeyPatch, *args: str) -> int:
    monkeypatch.setattr(sys, "argv", ["sparring", *args])
    try:
        main()
    except SystemExit as done:
        return int(done.code or 0)
    return 0


def test_the_command_prints_agreement_kappa_table_and_wrong_cases(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code = sparring(monkeypatch, "calibrate", "labels.jsonl", "--judge-model", "scripted:refund")
    out = capsys.readouterr().out
    assert code == 0
    # person met/met/not_met, judge met/not_met/not_met: p_o = 2/3, p_e = (2*1 + 1*2)/9,
    # kappa = (2/3 - 4/9) / (1 - 4/9) = 0.4
    assert "Overall: agreement 2/3 (66.7%), Cohen's kappa 0.40" in out
    assert "  met                     1        1        0\n" in out
    assert "  not_met                 0        1        0\n" in out
    assert (
        "  missed (labels.jsonl:2) The assistant offers a refund: person met, judge not_met: "
        "judged not_met"
    ) in out
    assert "self-agreement" not in out  # judged once


def test_repeat_measures_the_judges_self_agreement(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code = sparring(
        monkeypatch,
        "calibrate",
        "labels.jsonl",
        "--judge-model",
        "scripted:alternate",
        "--repeat",
        "2",
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "each judged 2 times" in out
    assert "Judge self-agreement over 2 answers: 50%; it changed its mind on 3: " in out


def test_no_judge_model_says_how_to_configure_one(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert sparring(monkeypatch, "calibrate", "labels.jsonl") == 2
    err = capsys.readouterr().err
    assert "no judge model to calibrate: give --judge-model SPEC" in err
    assert "SPARRING_JUDGE_MODEL" in err


def test_a_bad_labels_file_exits_2_naming_the_line(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "labels.jsonl").write_text(case_line("met", "x") + "\n[1, 2]\n")
    code = sparring(monkeypatch, "calibrate", "labels.jsonl", "--judge-model", "scripted:refund")
    assert code == 2
    assert "labels.jsonl:2: expected a JSON object" in capsys.readouterr().err


def test_a_restriction_case_is_judged_as_a_restriction(tmp_path: Path) -> None:
    labels = tmp_path / "labels.jsonl"
    labels.write_text(case_line("met", "ok").replace('"criterion"', '"restriction"') + "\n")
    (read,) = read_labels(labels)
    assert read.kind == "restriction"
    done = anyio.run(lambda: calibrate(ScriptedModel(handler=by_refund), [read]))
    (answer,) = done.results[0].answers
    assert answer.kind == "restriction" and answer.description.endswith("offers a refund")


RUN_AGENT = """
def agent(history):
    return "Your order ships tomorrow."
"""
RUN_SUITE = """target: {type: callable, ref: 'calibrate_agent:agent'}
scenarios:
  - id: late
    prompt: Where is my order?
    should: say when the order ships
    restrictions: [Offers a refund]
"""


def test_a_stored_runs_overrides_are_the_labels(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "calibrate_agent.py").write_text(RUN_AGENT)
    (project / "suite.yaml").write_text(RUN_SUITE)
    monkeypatch.setattr(sys, "path", [str(project), *sys.path])
    monkeypatch.setenv("SPARRING_STORE", str(project / "runs.db"))
    sparring(monkeypatch, "run", "suite.yaml", "--model", "scripted:refund", "--quiet")
    assert sparring(monkeypatch, "calibrate", "--run", "nope", "--judge-model", "x:y") == 2
    assert "nope" in capsys.readouterr().err  # no such run
    assert sparring(monkeypatch, "calibrate", "--judge-model", "x:y") == 2
    assert "give LABELS (a JSONL file of labelled cases) or --run RUN" in capsys.readouterr().err
    from sparring.cli.history import open_named
    from sparring.store.reading import find_run

    run_id = find_run(open_named(None), None).id
    assert sparring(monkeypatch, "calibrate", "--run", run_id, "--judge-model", "x:y") == 2
    assert "has no verdict overrides" in capsys.readouterr().err
    for target, value in (("t1.should1", "met"), ("r1", "met")):
        args = ("override", run_id, "late", "1", target, "--value", value, "--reason", "r")
        sparring(monkeypatch, *args, "--author", "ann")
    capsys.readouterr()
    code = sparring(monkeypatch, "calibrate", "--run", run_id, "--judge-model", "scripted:refund")
    out = capsys.readouterr().out
    assert code == 0
    assert f"2 labelled cases from the verdict overrides of run {run_id}" in out
    # the judge (not_met on a reply without "refund") is wrong on both corrected verdicts
    assert "late:t1.should1: agreement 0/1" in out and "late:r1: agreement 0/1" in out
    assert f"  late#1:t1.should1 (run {run_id}) late:t1.should1: person met, judge not_met" in out
    assert f"  late#1:r1 (run {run_id}) late:r1: person met, judge not_met" in out


def test_the_readme_example_line_is_a_valid_case(tmp_path: Path) -> None:
    readme = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")
    section = readme.split("#### Measuring the judge: `sparring calibrate`\n")[1]
    line = section.split("```json\n")[1].split("```")[0]
    (tmp_path / "labels.jsonl").write_text(line)
    (case,) = read_labels(tmp_path / "labels.jsonl")
    assert (case.id, case.kind, case.label) == ("refund-1", "criterion", "met")


def test_a_judge_that_never_answers_usably_exits_3(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code = sparring(monkeypatch, "calibrate", "labels.jsonl", "--judge-model", "scripted:garbage")
    out = capsys.readouterr().out
    assert code == 3
    assert (
        "Overall: agreement 0/3 (0%), Cohen's kappa n/a (the judge decided no case); 3 judge errors"
        in out
    )


def test_output_writes_the_results_as_json(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ("calibrate", "labels.jsonl", "--judge-model", "scripted:refund")
    assert sparring(monkeypatch, *args, "-o", "out.json") == 0
    data = json.loads((project / "out.json").read_text())
    assert data["judge_model"] == "scripted:refund" and data["labels"] == "labels.jsonl"
    assert data["overall"]["agreement"] == pytest.approx(2 / 3)
    assert data["overall"]["kappa"] == pytest.approx(0.4)
    assert data["overall"]["confusion"]["met"] == {"met": 1, "not_met": 1, "error": 0}
    assert [c["judge_label"] for c in data["cases"]] == ["met", "not_met", "not_met"]
    capsys.readouterr()
    assert sparring(monkeypatch, *args, "-o", "-") == 0
    done = capsys.readouterr()
    assert json.loads(done.out)["cases"][1]["id"] == "missed"  # JSON alone on stdout
    assert "Overall: agreement 2/3" in done.err


def test_a_labels_file_saved_with_a_bom_reads(tmp_path: Path) -> None:
    labels = tmp_path / "labels.jsonl"
    labels.write_bytes(b"\xef\xbb\xbf" + case_line("met", "I can refund it.").encode())
    (case,) = read_labels(labels)
    assert case.label == "met"
