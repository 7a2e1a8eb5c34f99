"""The C input of the campaign's indent line: seeded functions of loops, branches, calls and
comments, written with the cramped and uneven spacing indent exists to fix."""
import random
import sys

r = random.Random(69)
names = "count total index buffer length flags value offset cursor limit state mask".split()
types = ["int", "long", "unsigned", "char *", "size_t", "double"]


def expr(depth=0):
    if depth > 2 or r.random() < 0.4:
        return r.choice(names + [str(r.randrange(100))])
    return f"({expr(depth + 1)}{r.choice(['+', '-', '*', '<<', '&', '|'])}{expr(depth + 1)})"


def statement(depth):
    k = r.random()
    pad = "  " * depth
    if depth < 3 and k < 0.2:
        body = "".join(statement(depth + 1) for _ in range(r.randrange(1, 4)))
        return f"{pad}for({r.choice(names)}=0;{r.choice(names)}<{expr()};{r.choice(names)}++){{\n{body}{pad}}}\n"
    if depth < 3 and k < 0.4:
        body = "".join(statement(depth + 1) for _ in range(r.randrange(1, 3)))
        other = "".join(statement(depth + 1) for _ in range(r.randrange(0, 2)))
        tail = f"else{{\n{other}{pad}}}\n" if other else "\n"
        return f"{pad}if ( {expr()}>{expr()} ) {{\n{body}{pad}}}{tail}"
    if k < 0.5:
        return f"{pad}/* {' '.join(r.choice(names) for _ in range(6))} */\n"
    if k < 0.65:
        return f"{pad}{r.choice(names)}=helper_{r.randrange(50)}( {expr()},{expr()} );\n"
    return f"{pad}{r.choice(names)} {r.choice(['=', '+=', '-=', '^='])} {expr()};\n"


with open(sys.argv[1] if len(sys.argv) > 1 else "indent-input.c", "w") as f:
    f.write("#include <stddef.h>\n")
    for i in range(50):
        f.write(f"long helper_{i}(long a,long b);\n")
    for i in range(15000):
        params = ",".join(f"{r.choice(types)} {n}" for n in r.sample(names, 3))
        decls = "".join(f"  {r.choice(types)} {n}=0;\n" for n in r.sample(names, 4))
        body = "".join(statement(1) for _ in range(r.randrange(4, 12)))
        f.write(f"static {r.choice(types)} function_{i}({params}){{\n{decls}{body}  return 0;\n}}\n")
