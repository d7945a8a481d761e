"""Generate locomo-sample.json: small conversations in LoCoMo's published format (seeded).

    python generate_conversations.py [--seed 20261201] [--out locomo-sample.json]

Each conversation is two people talking over dated sessions, as LoCoMo's are: every
session has a few *fact lines* (a pet's name, a place, a number, a plan) among chit-chat,
and the questions ask for those facts afterwards, naming the dialog ids that hold them
(``evidence``) with a category as LoCoMo numbers them: 4 for one line, 1 for an answer
that needs two lines of two sessions, 2 for when something happened (the session date),
and 5 for an adversarial question whose answer is not in the conversation. The
conversations are 2-4 times the example agent's window, so every strategy must drop,
fold or recall. The same seed writes the same file byte for byte; nothing here comes
from the real LoCoMo data, which the user downloads themselves (docs/lab.md, "Long real
conversations").
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DEFAULT_SEED = 20261201
CONVERSATIONS = (("Ines", "Tomas", 16), ("Ada", "Bruno", 18), ("Mira", "Kofi", 20))
"""The two speakers of each conversation and its number of sessions."""

MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December")

FACTS = (
    ("adopted a {adj} cat named {name}", "What is the name of the cat {a} adopted?", "{name}"),
    ("started learning the {thing} with a teacher called {name}",
     "Who teaches {a} the {thing}?", "{name}"),
    ("booked a trip to {place} for the {nth} of next month",
     "Where is {a} going on the booked trip?", "{place}"),
    ("planted {count} lemon trees behind the {adj} shed", "How many lemon trees did {a} plant?",
     "{count}"),
    ("joined a rowing club called {name} Rowers", "Which rowing club did {a} join?",
     "{name} Rowers"),
    ("found an old {thing} in the attic, signed by {name}",
     "Who signed the old {thing} {a} found in the attic?", "{name}"),
)
"""Fact templates: what the speaker says they did, the question, the answer. Each speaker
uses each template once, so no question has two answers."""
NAMES = ("Pimenta", "Oberon", "Saffi", "Lumen", "Tavira", "Quillon", "Marlow", "Zephyra",
         "Ondina", "Brisca", "Caldo", "Verity", "Nuvola", "Aurel", "Fenwick", "Isolde")
PLACES = ("Tromso", "Valparaiso", "Zanzibar", "Ljubljana", "Hokkaido", "Cartagena",
          "Tbilisi", "Madeira")
THINGS = ("cello", "harp", "accordion", "banjo", "oboe", "sitar")
ADJECTIVES = ("grey", "striped", "blue", "crooked", "tiny", "ginger")
CHAT = (
    "Hey! It has been a while, how are things going on your side?",
    "Pretty calm this week, mostly work and long walks in the evening.",
    "I keep meaning to clean up the garden but the weather never cooperates.",
    "We watched a documentary about glaciers, it was oddly relaxing.",
    "Work has been hectic, so I am glad the weekend is almost here.",
    "That sounds lovely, I could use a slow weekend myself.",
    "I tried a new bakery near the station, the bread was still warm.",
    "My neighbour lent me a stack of novels, I am halfway through the first one.",
    "The kids are excited about the school trip, they talk of nothing else.",
    "I finally fixed the squeaky door, it only took three attempts.",
    "Let's catch up again soon, take care until then!",
    "Talk soon, and say hello to everyone for me.",
)


def _fact(rng: random.Random, speaker: str, template: tuple[str, str, str]
          ) -> tuple[str, str, str, str]:
    """One fact line, what was done, the question asking for it, and its answer."""
    deed, question, answer = template
    fill = {"name": rng.choice(NAMES), "place": rng.choice(PLACES), "thing": rng.choice(THINGS),
            "adj": rng.choice(ADJECTIVES), "count": str(rng.randint(3, 19)),
            "nth": f"{rng.randint(4, 28)}th", "a": speaker}
    done = deed.format(**fill)
    return f"Guess what, I {done}.", done, question.format(**fill), answer.format(**fill)


def conversation(rng: random.Random, number: int, a: str, b: str, sessions: int
                 ) -> dict[str, Any]:
    """One sample: its sessions and its questions."""
    data: dict[str, Any] = {"speaker_a": a, "speaker_b": b}
    facts: list[tuple[str, str, str, str, str, str]] = []
    unused = {speaker: rng.sample(FACTS, len(FACTS)) for speaker in (a, b)}
    # Facts spread from the first session to the last: some stay in view, most do not.
    count = 2 * len(FACTS)
    with_fact = {1 + round(i * (sessions - 1) / (count - 1)) for i in range(count)}
    for s in range(1, sessions + 1):
        date = f"{rng.randint(8, 20)}:{rng.choice(('05', '20', '40'))} on {rng.randint(1, 28)} " \
               f"{MONTHS[(s + number) % 12]}, 2023"
        lines = []
        for index in range(rng.randint(9, 12)):
            speaker = (a, b)[index % 2]
            dia_id = f"D{s}:{index + 1}"
            if index == 3 + s % 2 and s in with_fact and unused[speaker]:
                text, done, question, answer = _fact(rng, speaker, unused[speaker].pop())
                facts.append((dia_id, speaker, done, question, answer, date))
            else:
                text = rng.choice(CHAT)
            line: dict[str, Any] = {"speaker": speaker, "dia_id": dia_id, "text": text}
            if index == 8 and s % 4 == 0:
                line["img_url"] = [f"https://example.invalid/{number}/{s}.jpg"]
                line["blip_caption"] = "a photo of a garden with a wooden bench"
            lines.append(line)
        data[f"session_{s}_date_time"] = date
        data[f"session_{s}"] = lines
    qa: list[dict[str, Any]] = []
    for dia_id, _speaker, _done, question, answer, _date in rng.sample(facts, len(facts)):
        qa.append({"question": question, "answer": answer, "evidence": [dia_id], "category": 4})
    first, last = facts[0], facts[-1]
    qa.append({"question": f"{first[3][:-1]}, and {last[3][0].lower()}{last[3][1:]}",
               "answer": f"{first[4]}; {last[4]}", "evidence": [first[0], last[0]],
               "category": 1})
    early = facts[1]
    qa.append({"question": f"When did {early[1]} say they {early[2]}?",
               "answer": early[5].split(" on ", 1)[1], "evidence": [early[0]], "category": 2})
    qa.append({"question": f"What is the name of {b}'s horse?", "adversarial_answer": "Saffi",
               "evidence": [], "category": 5})
    return {"sample_id": f"sample-{number}", "conversation": data, "qa": qa,
            "event_summary": {}, "observation": {}, "session_summary": {}}


def generate(seed: int = DEFAULT_SEED) -> list[dict[str, Any]]:
    """Every conversation of the file, from ``seed``."""
    rng = random.Random(seed)
    return [conversation(rng, n, a, b, sessions)
            for n, (a, b, sessions) in enumerate(CONVERSATIONS, start=1)]


def main() -> None:
    """Write the file (``--seed``, ``--out``)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--out", type=Path, default=HERE / "locomo-sample.json")
    options = parser.parse_args()
    text = json.dumps(generate(options.seed), indent=1, ensure_ascii=False) + "\n"
    options.out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
