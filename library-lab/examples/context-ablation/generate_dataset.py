"""Generate dataset.jsonl for the context-ablation experiment (deterministic, seeded).

    python generate_dataset.py [--seed 20261130] [--out dataset.jsonl]

Each item is one scripted session built to stress context management:

- a *key fact* (an identifier, an amount and a name in one sentence) planted in the first
  turn and asked for, by its identifier, in the very last turn — the amount and the name
  are the item's ``expected_facts``;
- *probe facts* planted early and asked for later (``probes``: the turn index of each
  question and the strings its answer must contain);
- large scripted tool outputs (``CALL tool {json}`` turns with ``tool_results``), one of
  which hides a probed fact deep inside it;
- a skill activation (``CALL activate_skill {"name": ...}``) whose body holds a probed fact;
- filler turns: plain prose with no identifier, number or name, so that only a strategy that
  drops history can lose the facts, and identifier-heavy distractor notes that compete for
  space in an extractive summary.

The conventions follow the offline model (docs/offline-model.md): a user line
``CALL name {json}`` makes it call that tool; a question is answered with the fact sentence
of the prompt that shares the most keywords with it, or "I don't know" when none is left.
The same seed always writes the same file byte for byte.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_SEED = 20261130
TURN_COUNTS = (30, 34, 40, 46, 52, 58, 64, 72, 80, 92, 104, 120)
LONG_TURN_COUNTS = (100, 120, 140)
"""Long items: their history reaches several times the 32k window, through frequent large
tool outputs, so every strategy must drop, fold or cut."""
LONG_TOOL_EVERY = 3
"""In a long item, one turn in this many pulls a large tool output..."""
LONG_TOOL_LINES = (90, 140)
"""...of this many log lines (a short item's extra outputs have 30-60)."""

FIRST = [
    "Marta",
    "Jonas",
    "Aiko",
    "Rafael",
    "Ingrid",
    "Tomasz",
    "Leila",
    "Oskar",
    "Priya",
    "Henrik",
    "Sofia",
    "Kwame",
    "Elena",
    "Mateo",
    "Yusuf",
    "Greta",
]
LAST = [
    "Kowalski",
    "Lindqvist",
    "Tanaka",
    "Moreau",
    "Okafor",
    "Brennan",
    "Haddad",
    "Novak",
    "Iyer",
    "Castell",
    "Dubois",
    "Mensah",
    "Varga",
    "Quintero",
    "Aydin",
    "Falk",
]
CITIES = ["Rotterdam", "Gdansk", "Valencia", "Tampere", "Porto", "Graz", "Bergen", "Lyon"]

# (key-fact sentence, final question). Each question shares at least half of its keywords
# with its key sentence only, so nothing else in a session can answer it.
KEY_FACTS = [
    (
        "Invoice {id} belongs to customer {name}, amount {amount}.",
        "What amount and customer belong to invoice {id}?",
        "INV",
    ),
    (
        "Purchase order {id} was approved by {name} for {amount}.",
        "Who approved purchase order {id}, and for what amount?",
        "PO",
    ),
    (
        "Contract {id} with supplier {name} has a penalty cap of {amount}.",
        "What penalty cap and supplier does contract {id} have?",
        "CTR",
    ),
    (
        "Claim {id} filed by {name} was settled at {amount}.",
        "Who filed claim {id}, and what was it settled at?",
        "CLM",
    ),
]

PROBES = [
    (
        "The backup vault passphrase hint for {city} is {word}-{num}.",
        "What is the backup vault passphrase hint for {city}?",
        "{word}-{num}",
    ),
    (
        "The on-call escalation contact this quarter is {name}.",
        "Who is the on-call escalation contact this quarter?",
        "{name}",
    ),
    (
        "Shipment {id} left the {city} depot on pallet {num}.",
        "Which pallet did shipment {id} leave the depot on?",
        "{num}",
    ),
    (
        "The licence seat count agreed with {name} is {num} seats.",
        "What licence seat count was agreed with {name}?",
        "{num}",
    ),
]
WORDS = ["amber", "falcon", "granite", "harbor", "juniper", "lantern", "meadow", "nickel"]

# Facts that live inside a tool output, far past what the model echoes back.
TOOL_FACTS = [
    (
        "fetch_audit_log",
        "Root cause reference for the outage: {id}.",
        "What was the root cause reference for the outage?",
        "{id}",
        "RC",
    ),
    (
        "fetch_inventory",
        "Reserved stock for the {city} launch: {num} units.",
        "How many units of reserved stock are there for the {city} launch?",
        "{num}",
        "",
    ),
]

SKILLS = {
    "refund-policy": ("Which approval code do refunds above the threshold need?", "RF-APPROVE-77"),
    "incident-runbook": ("Which bridge code does the incident runbook give?", "BRIDGE-4410"),
}

SUBJECTS = [
    "the team",
    "the review group",
    "our planning crew",
    "the night shift",
    "the design circle",
    "everyone on the thread",
    "the support desk",
]
VERBS = ["went over", "talked through", "revisited", "questioned", "tidied up", "sketched"]
OBJECTS = [
    "the rollout plan",
    "the onboarding notes",
    "the layout of the dashboard",
    "the wording of the status page",
    "the handover checklist",
    "the backlog order",
    "the meeting cadence",
    "the naming of the test suites",
    "the retro format",
]
TAILS = [
    "and agreed to look again after the next sync",
    "without changing anything yet",
    "and left a few open questions for later",
    "and wrote down what felt unclear",
    "and decided the current approach is good enough for now",
    "and asked for a shorter summary next time",
]
DISTRACTORS = [
    "Ticket T-{n} was closed after a quick check.",
    "Build B-{n} passed on the second attempt.",
    "Room R-{n} is booked for the afternoon sync.",
    "Draft D-{n} of the style guide was shared.",
]


def filler(rng: random.Random) -> str:
    """Two or three prose sentences with no identifier, number or name."""
    sentences = []
    for _ in range(rng.randint(2, 3)):
        sentence = (
            f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)} {rng.choice(TAILS)}."
        )
        sentences.append(sentence[0].upper() + sentence[1:])
    return "For the record, " + " ".join(sentences)[0].lower() + " ".join(sentences)[1:]


def log_output(rng: random.Random, lines: int, planted: str | None) -> str:
    """A large tool output: log lines full of identifiers, one planted fact deep inside."""
    rows = []
    for _ in range(lines):
        rows.append(
            f"{2026}-03-{rng.randint(10, 28)}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d} "
            f"svc-{rng.randint(1, 9)} req {rng.randint(100000, 999999)} "
            f"status {rng.choice([200, 200, 200, 404, 500, 503])} "
            f"latency {rng.randint(3, 900)} ms"
        )
    if planted:
        rows.insert(lines * 2 // 3, planted)
    return "\n".join(rows)


def make_item(index: int, turns: int, rng: random.Random, *,
              long: bool = False) -> dict[str, object]:
    """One scripted session of ``turns`` user turns (``long``: a large tool output every
    :data:`LONG_TOOL_EVERY` turns instead of one every twenty)."""
    name = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
    key_sentence, key_question, prefix = KEY_FACTS[index % len(KEY_FACTS)]
    key_id = f"{prefix}-{rng.randint(10000, 99999)}"
    amount = f"{rng.randint(2, 95)},{rng.randint(100, 999)} EUR"
    script: list[object] = [None] * turns
    script[0] = (
        f"Please keep this on file. {key_sentence.format(id=key_id, name=name, amount=amount)}"
    )

    probes: list[dict[str, object]] = []
    free = list(range(1, turns - 1))

    def place(early: tuple[float, float], late: tuple[float, float]) -> tuple[int, int]:
        plant = _pick(free, rng, turns, *early)
        ask = _pick(free, rng, turns, *late)
        return plant, ask

    probe = PROBES[index % len(PROBES)]
    values = {
        "city": rng.choice(CITIES),
        "word": rng.choice(WORDS),
        "num": str(rng.randint(11, 97)),
        "name": f"{rng.choice(FIRST)} {rng.choice(LAST)}",
        "id": f"SHP-{rng.randint(1000, 9999)}",
    }
    plant, ask = place((0.05, 0.2), (0.55, 0.8))
    script[plant] = probe[0].format(**values)
    script[ask] = probe[1].format(**values)
    probes.append({"turn": ask, "expected": [probe[2].format(**values)], "kind": "planted"})

    tool, fact, question, answer, id_prefix = TOOL_FACTS[index % len(TOOL_FACTS)]
    tool_values = {
        "id": f"{id_prefix}-{rng.randint(1000, 9999)}",
        "city": rng.choice(CITIES),
        "num": str(rng.randint(120, 980)),
    }
    plant, ask = place((0.15, 0.35), (0.6, 0.9))
    args = json.dumps({"day": f"2026-03-{rng.randint(10, 28)}"})
    script[plant] = {
        "user": f"Pull the data, please.\nCALL {tool} {args}",
        "tool_results": {tool: log_output(rng, rng.randint(40, 70), fact.format(**tool_values))},
    }
    script[ask] = question.format(**tool_values)
    probes.append({"turn": ask, "expected": [answer.format(**tool_values)], "kind": "tool_output"})

    skill = sorted(SKILLS)[index % len(SKILLS)]
    skill_question, skill_answer = SKILLS[skill]
    plant, ask = place((0.1, 0.3), (0.7, 0.95))
    script[plant] = f"Load the {skill} guidance.\nCALL activate_skill {json.dumps({'name': skill})}"
    script[ask] = skill_question
    probes.append({"turn": ask, "expected": [skill_answer], "kind": "skill"})

    extras = turns // LONG_TOOL_EVERY if long else max(2, turns // 20)
    lines = LONG_TOOL_LINES if long else (30, 60)
    for _ in range(extras):
        slot = _pick(free, rng, turns, 0.1, 0.9)
        extra = "fetch_metrics" if rng.random() < 0.5 else "fetch_audit_log"
        script[slot] = {
            "user": f"Attach the raw numbers.\nCALL {extra} {json.dumps({'page': slot})}",
            "tool_results": {extra: log_output(rng, rng.randint(*lines), None)},
        }
    for slot in list(free):
        script[slot] = (
            rng.choice(DISTRACTORS).format(n=rng.randint(100, 999))
            if rng.random() < 0.25
            else filler(rng)
        )
        free.remove(slot)
    script[turns - 1] = key_question.format(id=key_id)
    return {
        "id": f"ablation-{index + 1:02d}" + ("-long" if long else ""),
        "turns": script,
        # The id is in the question itself, so only what the question does not say counts.
        "expected_facts": [amount, name],
        "probes": sorted(probes, key=lambda p: p["turn"]),  # type: ignore[arg-type, return-value]
    }


def _pick(free: list[int], rng: random.Random, turns: int, low: float, high: float) -> int:
    """A free turn index between ``low`` and ``high`` of the session (removed from ``free``)."""
    window = [i for i in free if low * turns <= i <= high * turns] or free
    choice = rng.choice(window)
    free.remove(choice)
    return choice


def generate(seed: int = DEFAULT_SEED) -> list[dict[str, object]]:
    """Every item, in order, for ``seed``."""
    rng = random.Random(seed)
    items = [make_item(i, n, rng) for i, n in enumerate(TURN_COUNTS)]
    # Drawn after the short items, so adding them left the short items byte for byte as
    # they were.
    items += [make_item(len(TURN_COUNTS) + i, n, rng, long=True)
              for i, n in enumerate(LONG_TURN_COUNTS)]
    return items


def main() -> None:
    """Write the dataset file."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--out", type=Path, default=HERE / "dataset.jsonl")
    args = parser.parse_args()
    with args.out.open("w", encoding="utf-8") as handle:
        for item in generate(args.seed):
            handle.write(json.dumps(item, ensure_ascii=False, sort_keys=True) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
