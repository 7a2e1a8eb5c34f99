"""The m4 input of the campaign's m4 line: macro definitions, then seeded text in which many words
are macro calls (some recursive, some with arithmetic), as a code or document generator feeds m4."""
import random
import sys

r = random.Random(69)
words = "alpha beta gamma delta flag sweep compiler vector loop inline unroll branch cache memory".split()
plain = "alpha beta gamma delta compiler memory".split()
head = """divert(-1)
define(`flag', `FLAG')
define(`sweep', `sweep_$1')
define(`loop', `ifelse(eval($1 > 0), 1, `L`'loop(decr($1))')')
define(`vector', `[$1|$2|$3]')
define(`cache', `eval($1 * $2 + 7)')
define(`inline', `ifelse($1, `', `none', `translit(`$1', `a-z', `A-Z')')')
define(`unroll', `loop(8)')
define(`branch', `ifelse(eval($1 % 2), 0, `even', `odd')')
divert(0)dnl
"""
with open(sys.argv[1] if len(sys.argv) > 1 else "macros.m4", "w") as f:
    f.write(head)
    for i in range(60000):
        line = []
        for _ in range(r.randrange(4, 12)):
            w = r.choice(words)
            if w == "sweep":
                w = f"sweep({r.choice(plain)})"
            elif w == "vector":
                w = f"vector({i}, {r.randrange(100)}, {r.choice(plain)})"
            elif w == "cache":
                w = f"cache({r.randrange(1000)}, {r.randrange(1000)})"
            elif w == "inline":
                w = f"inline({r.choice(plain)})"
            elif w == "loop":
                w = f"loop({r.randrange(1, 6)})"
            elif w == "branch":
                w = f"branch({i})"
            line.append(w)
        f.write(" ".join(line) + "\n")
