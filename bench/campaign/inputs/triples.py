"""The N-Triples input of the campaign's serd line: 600,000 triples (62 MB), seeded."""
import random
import sys

r = random.Random(69)
words = "alpha beta gamma delta flag sweep compiler vector loop inline unroll branch cache memory".split()
with open(sys.argv[1] if len(sys.argv) > 1 else "triples.nt", "w") as f:
    for i in range(200000):
        s = f"<http://example.org/item/{i}>"
        for j in range(3):
            p = f"<http://example.org/prop/{r.choice(words)}>"
            if r.random() < 0.5:
                o = f"<http://example.org/item/{r.randrange(200000)}>"
            else:
                o = '"' + " ".join(r.choice(words) for _ in range(r.randrange(1, 12))) + '"' \
                    + r.choice(["@en", "@de", ""])
            f.write(f"{s} {p} {o} .\n")
