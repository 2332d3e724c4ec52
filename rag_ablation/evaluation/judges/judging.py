"""Judges of answers: a registry of the LLM judge and the judge-free ones, strict verdict
parsing, canary answers, and pairwise comparisons run in both orders.

Every judge maps (question, reference, answer) to a verdict: ``True`` (correct), ``False``
(incorrect) or ``None`` (invalid: a reply that is not a verdict). All judges are calibrated the
same way against the hand grades (``rag_ablation.evaluation.judges.agreement``), so a user without a
good LLM still has a judge whose error rates are known.

Judges (``JUDGES``, names used in ``judge.judges`` of params.yaml):

* ``llm``: the chapter's grading prompt (``prompts/<judge.prompt>.txt`` with ``{question}``,
  ``{reference}`` and ``{answer}``; a refusal is incorrect), through the prompt cache. The reply
  is parsed strictly (``parse_verdict``): once surrounding whitespace, punctuation and markup
  are trimmed and case is ignored it must be exactly CORRECT or INCORRECT; anything else is
  invalid, counted and shown, never guessed.
* ``token_f1``: correct when SQuAD token F1 against the reference is at or above
  ``judge.token_f1_threshold`` (inclusive).
* ``contains``: correct when the normalized answer contains the normalized reference.

Every judge also gives a **score** in [0, 1] per answer (``Verdict.score``), kept beside the
verdict so that a threshold can be chosen on the hand grades (``evaluation.judges.thresholds``):
``token_f1`` its F1, ``contains`` 1 or 0, and ``llm`` the probability of the CORRECT verdict from
the first reply token's log probabilities (``label_probability``, with ``judge.top_logprobs``
alternatives). A backend or model that returns no probabilities gives the reply's verdict with
no score (``None``), never a made-up one.

Every answer also gets two **answer features** (``answer_features``), kept beside the verdicts
for the combined judge (``evaluation.judges.combined``): ``new_f1``, the token F1 against the
reference over the tokens the question does not contain (what the answer adds to the question),
and ``question_overlap``, the share of the answer's tokens that are in the question (1 for an
answer that adds nothing to it, the empty answer included).

Availability (``judge_availability``): which of the judges named in ``judge.judges`` can run
with the judge's LLM config, and the status and reason each stage records for each judge. The
judge-free judges always run; the LLM judge is unavailable when its backend is ``none``.

Pairwise (``compare_both_orders``): the pairwise prompt (``{question}``, ``{a}``, ``{b}``) is
asked twice, once with each answer in slot A. The reply must be exactly A or B after the same
trimming (``parse_choice``). A win counts only when both orders pick the same answer; any
disagreement or invalid reply is a tie.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rag_ablation.core.config import LlmConfig
from rag_ablation.core.errors import lookup
from rag_ablation.evaluation.scoring.answer_measures import contains_reference, token_f1
from rag_ablation.evaluation.judges.answer_features import answer_features
from rag_ablation.evaluation.judges.grades import answer_sha256
from rag_ablation.llm.client.concurrent import chat_many
from rag_ablation.llm.client.prompt_cache import CachedLLM
from rag_ablation.llm.client.prompting import fill, user_messages

_TRIM = " \t\r\n.,;:!?\"'`*_()[]{}<>#-"


def _trimmed(reply: str) -> str:
    return reply.strip(_TRIM).upper()


def parse_verdict(reply: str) -> bool | None:
    """``True`` for CORRECT, ``False`` for INCORRECT, ``None`` for anything else.

    Leading and trailing whitespace, punctuation and markup (``.,;:!?"'`*_()[]{}<>#-``) are
    trimmed and case is ignored; nothing else is: "Correct." and "**INCORRECT**" are verdicts,
    "The answer is CORRECT", "CORRECT or INCORRECT" and "" are not.
    """
    word = _trimmed(reply)
    return {"CORRECT": True, "INCORRECT": False}.get(word)


def parse_choice(reply: str) -> str | None:
    """``"A"`` or ``"B"`` when the trimmed, upper-cased reply is exactly that letter, else None."""
    word = _trimmed(reply)
    return word if word in ("A", "B") else None


@dataclass(frozen=True)
class Item:
    """One answer to judge."""

    question: str
    reference: str
    answer: str


@dataclass(frozen=True)
class Verdict:
    """One judge's verdict on one answer: ``verdict`` (True correct, False incorrect, None
    invalid), ``detail`` (the LLM's reply, or the judge-free judge's score as text) and
    ``score``, the judge's score in [0, 1] (higher: more likely correct), None when the judge
    gave none (an LLM backend without token probabilities)."""

    verdict: bool | None
    detail: str
    score: float | None = None


def label_probability(alternatives: Sequence[tuple[str, float]] | None, *, yes: str, no: str) -> float | None:
    """P(``yes``) between the two labels from the first reply token's alternatives.

    ``alternatives``: ``(token text, natural log probability)`` pairs (``Generation.top_logprobs``).
    A token *begins* a label when, trimmed of whitespace and markup (``_TRIM``) and upper-cased,
    it is a non-empty prefix of it ("Correct", " COR", "**C" begin CORRECT; "IN", "I" begin
    INCORRECT). With ``m_yes`` and ``m_no`` the summed probabilities of the tokens that begin each
    label, the score is ``m_yes / (m_yes + m_no)``. None when ``alternatives`` is None or no
    alternative begins either label (the model's mass is elsewhere: no honest score). A token that
    begins both labels (impossible for CORRECT/INCORRECT and A/B) counts for neither."""
    if not alternatives:
        return None
    m_yes = m_no = 0.0
    for token, logprob in alternatives:
        t = _trimmed(token)
        if not t:
            continue
        y, n = yes.startswith(t), no.startswith(t)
        if y and not n:
            m_yes += math.exp(logprob)
        elif n and not y:
            m_no += math.exp(logprob)
    total = m_yes + m_no
    return m_yes / total if total > 0 else None


JudgeFn = Callable[[Sequence[Item]], list[Verdict]]


def f1_judge(threshold: float) -> JudgeFn:
    """Correct when ``token_f1(answer, reference) >= threshold`` (inclusive)."""

    def judge(items: Sequence[Item]) -> list[Verdict]:
        out = []
        for it in items:
            f1 = token_f1(it.answer, it.reference)
            out.append(Verdict(f1 >= threshold, f"{f1:.4f}", f1))
        return out

    return judge


def contains_judge(items: Sequence[Item]) -> list[Verdict]:
    """Correct when the normalized answer contains the normalized reference."""
    out = []
    for it in items:
        found = contains_reference(it.answer, it.reference)
        out.append(Verdict(found, "", float(found)))
    return out


def llm_judge(llm: CachedLLM, template: str, *, num_predict: int, concurrency: int = 1,
              progress: Callable[[Any], Any] = lambda it: it, top_logprobs: int = 0) -> JudgeFn:
    """The grading prompt through the prompt cache; replies end at the first line break. With
    ``top_logprobs`` > 0 each verdict's score is P(CORRECT) from the first reply token
    (``label_probability``); with 0, or from a backend that returns no probabilities, None."""

    def judge(items: Sequence[Item]) -> list[Verdict]:
        conversations = [grading_messages(template, it) for it in items]
        replies = chat_many(llm, conversations, num_predict=num_predict, stop=("\n",),
                            concurrency=concurrency, progress=progress, top_logprobs=top_logprobs)
        return [Verdict(parse_verdict(gen.text), gen.text.strip(),
                        label_probability(gen.top_logprobs, yes="CORRECT", no="INCORRECT"))
                for gen, _ in replies]

    return judge


def grading_messages(template: str, item: Item) -> list[dict[str, str]]:
    return user_messages(fill(template, question=item.question, reference=item.reference, answer=item.answer))




def build_judges(names: Sequence[str], *, token_f1_threshold: float,
                 llm: Callable[[], JudgeFn] | None) -> dict[str, JudgeFn]:
    """The judges named in params, from the registry. ``llm`` makes the LLM judge (None when no
    LLM is available: asking for ``llm`` then raises). An unknown name lists the valid ones."""
    registry: Mapping[str, Callable[[], JudgeFn]] = {
        "llm": llm or _no_llm,
        "token_f1": lambda: f1_judge(token_f1_threshold),
        "contains": lambda: contains_judge,
    }
    return {name: lookup(registry, name, "judge")() for name in names}


def _no_llm() -> JudgeFn:
    raise ValueError("the llm judge needs an LLM backend (judge.llm.backend is none)")


# ----------------------------------------------------------------------------- verdict records
VERDICT_NAMES = {True: "correct", False: "incorrect", None: "invalid"}
"""How a verdict is written in the stages' files."""


@dataclass(frozen=True)
class JudgedAnswers:
    """Every judge's verdicts on a list of answer records (``judge_answers``): ``ids`` and
    ``answers`` hold the records' question ids and answer texts, in record order, and
    ``verdicts`` maps each judge's name to one verdict per record, in the same order;
    ``features`` holds each record's ``answer_features`` (empty: none computed)."""

    ids: tuple[str, ...]
    answers: tuple[str, ...]
    verdicts: Mapping[str, Sequence[Verdict]]
    features: tuple[Mapping[str, float], ...] = ()

    def rows(self) -> list[dict[str, Any]]:
        """One row per record, as the judge stage writes it: ``id``, ``answer_sha256`` (of the
        answer text judged) and, per judge, ``{"verdict": correct|incorrect|invalid, "detail":
        <the LLM's reply, or the judge-free judge's score>, "score": <in [0, 1], or null>}``, and
        ``features``: the record's ``answer_features`` (when computed)."""
        return [{"id": qid, "answer_sha256": answer_sha256(answer),
                 **{name: {"verdict": VERDICT_NAMES[vs[i].verdict], "detail": vs[i].detail, "score": vs[i].score}
                    for name, vs in self.verdicts.items()},
                 **({"features": dict(self.features[i])} if self.features else {})}
                for i, (qid, answer) in enumerate(zip(self.ids, self.answers))]

    def unscored(self) -> dict[str, int]:
        """How many verdicts of each judge came without a score."""
        return {name: sum(v.score is None for v in vs) for name, vs in self.verdicts.items()}

    def invalid(self) -> dict[str, int]:
        """How many invalid verdicts (replies that are not a verdict) each judge gave."""
        return {name: sum(v.verdict is None for v in vs) for name, vs in self.verdicts.items()}

    def summary(self) -> str:
        """One line for stderr: ``NAME: C/N correct, I invalid`` per judge, comma-separated."""
        return ", ".join(f"{n}: {sum(v.verdict is True for v in vs)}/{len(vs)} correct, "
                         f"{sum(v.verdict is None for v in vs)} invalid" for n, vs in self.verdicts.items())


def judge_answers(records: Sequence[Mapping[str, Any]], questions: Mapping[str, Mapping[str, Any]],
                  judges: Mapping[str, JudgeFn]) -> JudgedAnswers:
    """Every judge of ``judges`` on every answer record (``id`` and ``answer``, as a generate
    output holds them), against its question's ``question`` and reference ``answer`` in
    ``questions`` (question id -> question record), with each answer's ``answer_features``."""
    items = [Item(question=questions[r["id"]]["question"], reference=questions[r["id"]]["answer"], answer=r["answer"])
             for r in records]
    return JudgedAnswers(ids=tuple(r["id"] for r in records), answers=tuple(r["answer"] for r in records),
                         verdicts={name: judge(items) for name, judge in judges.items()},
                         features=tuple(answer_features(it.question, it.reference, it.answer) for it in items))


def unscored_note(unscored: int | None, total: int, *, top_logprobs: int) -> str | None:
    """The one line a stage records (and prints) when LLM verdicts came without a score: None
    when every verdict has one, when the LLM judge did not run (``unscored`` None) or judged
    nothing. With ``top_logprobs`` 0 no score was asked for; otherwise the backend or model
    returned no token probabilities for ``unscored`` of the ``total`` verdicts."""
    if not unscored or not total:
        return None
    if top_logprobs == 0:
        return "the llm judge's verdicts have no score: judge.top_logprobs is 0 (the reply's word only)"
    return (f"the llm judge's backend returned no token probabilities for {unscored} of {total} verdicts: "
            f"those are the reply's word only, with no score (serve the model with log probabilities, "
            f"e.g. vLLM, llama.cpp's server or Ollama 0.12.11+, to score them)")


# ----------------------------------------------------------------------------- availability
LLM_JUDGE_UNAVAILABLE = "the llm judge needs an LLM, and its backend is none"
"""The reason recorded for the ``llm`` judge when the judge's LLM backend is ``none``."""


@dataclass(frozen=True)
class JudgeAvailability:
    """Which of the judges named in ``judge.judges`` can run.

    ``names``: every judge named, in ``judge.judges`` order. ``reasons``: for each judge that
    cannot run, why (one sentence, written to the stages' files)."""

    names: tuple[str, ...]
    reasons: Mapping[str, str]

    @property
    def runnable(self) -> list[str]:
        """The judges that run, in ``judge.judges`` order."""
        return [n for n in self.names if n not in self.reasons]

    @property
    def uses_llm(self) -> bool:
        """True when the LLM judge runs, so the stage must build the judge's backend."""
        return "llm" in self.runnable

    def statuses(self) -> dict[str, dict[str, Any]]:
        """A new record per judge, in ``names`` order: ``{"status": "ok", "reason": None}`` for
        a judge that runs, ``{"status": "unavailable", "reason": <why>}`` for one that cannot.
        The dicts are the caller's to extend (with the LLM's identity, a threshold, ...)."""
        return {n: ({"status": "unavailable", "reason": self.reasons[n]} if n in self.reasons
                    else {"status": "ok", "reason": None}) for n in self.names}


def judge_availability(*, judges: Sequence[str], judge_llm: LlmConfig) -> JudgeAvailability:
    """Which of ``judges`` (the names of ``judge.judges``) can run when the judge's model is
    ``judge_llm`` (``JudgeConfig.judge_llm``: ``judge.llm``, else the answer model ``llm``).

    The judge-free judges always run; ``llm`` runs unless ``judge_llm``'s backend is ``none``,
    in which case it is unavailable with ``LLM_JUDGE_UNAVAILABLE`` as its reason."""
    reasons = {"llm": LLM_JUDGE_UNAVAILABLE} if "llm" in judges and not judge_llm.enabled else {}
    return JudgeAvailability(names=tuple(judges), reasons=reasons)


# ----------------------------------------------------------------------------- canaries
CANARY_KINDS = ("dummy_yes", "dummy_sure", "question_repeated", "empty", "padded_reference",
                "paraphrased_reference")
"""Canary answers made for every graded question. The first four are wrong by construction;
the last two carry exactly the reference's facts."""

CANARY_EXPECTED = {k: k in ("padded_reference", "paraphrased_reference") for k in CANARY_KINDS}
"""Whether a sound judge accepts (calls correct) each canary kind."""


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:] if text[:1].isupper() and not text[1:2].isupper() else text


def padded(reference: str) -> str:
    """The reference padded to at least three times its length with sentences that add no facts.

    Deterministic (no model writes it, so the padding cannot smuggle in claims, as the chapter
    found a model's padding did): the reference, then fixed content-free sentences (one of them
    restating the reference) in order until the text is at least three times as long as the
    reference, or the fillers run out."""
    ref = reference.strip()
    body = ref if ref.endswith((".", "!", "?")) else ref + "."
    fillers = [f"To put it another way: {_lower_first(body)}", "That is what the handbook says on this point.",
               "Nothing more is needed to answer the question as it was asked.",
               f"In short, and once more for clarity: {_lower_first(body)}",
               "The documentation states it plainly, and the answer above sums it up."]
    parts = [body]
    for filler in fillers:
        if len(" ".join(parts)) >= 3 * len(ref):
            break
        parts.append(filler)
    return " ".join(parts)


def paraphrased(reference: str) -> str:
    """A rewording of the reference that keeps every fact: a framing clause around it.

    Deterministic, so it is correct by construction; it tests tolerance for form, not synonyms."""
    ref = reference.strip().rstrip(".")
    return f"According to the handbook, {_lower_first(ref)}."


def canaries(question: str, reference: str) -> dict[str, str]:
    """The canary answers of one question, by kind (``CANARY_KINDS``)."""
    return {
        "dummy_yes": "Yes.",
        "dummy_sure": "Sure, here is the answer.",
        "question_repeated": question.strip(),
        "empty": "",
        "padded_reference": padded(reference),
        "paraphrased_reference": paraphrased(reference),
    }


# ----------------------------------------------------------------------------- pairwise
@dataclass(frozen=True)
class PairResult:
    """Both orders of one pair. ``first``/``second`` are the raw choices (A/B/None) with the
    ``x`` answer in slot A, then in slot B; ``winner`` is ``"x"``, ``"y"`` or ``"tie"``."""

    x_first_choice: str | None
    y_first_choice: str | None
    x_first_reply: str
    y_first_reply: str
    x_first_p_a: float | None = None  # P(A) of the first reply token, x in slot A (None: no probabilities)
    y_first_p_a: float | None = None  # the same with y in slot A

    @property
    def picks(self) -> tuple[str | None, str | None]:
        """Which answer (``x``/``y``) each order picked (None when invalid)."""
        first = {"A": "x", "B": "y"}.get(self.x_first_choice or "")
        second = {"A": "y", "B": "x"}.get(self.y_first_choice or "")
        return first, second

    @property
    def consistent(self) -> bool:
        a, b = self.picks
        return a is not None and a == b

    @property
    def winner(self) -> str:
        a, b = self.picks
        return a if a is not None and a == b else "tie"  # a win needs both orders (``consistent``)


def pair_messages(template: str, question: str, a: str, b: str) -> list[dict[str, str]]:
    return user_messages(fill(template, question=question, a=a, b=b))


def compare_both_orders(llm: CachedLLM, template: str, pairs: Sequence[tuple[str, str, str]], *,
                        num_predict: int, concurrency: int = 1, top_logprobs: int = 0) -> list[PairResult]:
    """Judge each ``(question, x, y)`` twice: x in slot A and y in B, then swapped (both the
    texts and what A and B name are swapped). Replies end at the first line break. With
    ``top_logprobs`` > 0 each order also gets P(A) from its first reply token
    (``label_probability`` between A and B), scored as the grading verdicts are."""
    conversations = []
    for question, x, y in pairs:
        conversations.append(pair_messages(template, question, x, y))
        conversations.append(pair_messages(template, question, y, x))
    replies = chat_many(llm, conversations, num_predict=num_predict, stop=("\n",), concurrency=concurrency,
                        top_logprobs=top_logprobs)
    out = []
    for i in range(len(pairs)):
        first, second = replies[2 * i][0], replies[2 * i + 1][0]
        out.append(PairResult(parse_choice(first.text), parse_choice(second.text), first.text.strip(),
                              second.text.strip(), label_probability(first.top_logprobs, yes="A", no="B"),
                              label_probability(second.top_logprobs, yes="A", no="B")))
    return out
