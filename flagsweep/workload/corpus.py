"""The corpus input: what a file system holds, for a compressor; a pure function of its size
and seed."""

from __future__ import annotations

import struct

import numpy as np

from flagsweep.workload.randomness import Stream, zipf, zipf_cdf

# A sequence of "files" of mixed sizes, each of one kind: English-like prose, C-like source,
# CSV records, binary records, sparse low-entropy data and incompressible bytes (as if already
# compressed). Kinds take turns by byte share, so even a small corpus has all of them.

CORPUS_PURPOSE = 2
CORPUS_MIX = {"prose": 0.32, "code": 0.18, "csv": 0.14, "records": 0.16, "sparse": 0.14,
              "random": 0.06}
LINE_WIDTH = 72
CODE_POOL = 20000  # distinct code lines per corpus
PHRASES, PHRASE_EVERY = 300, 4
MAX_INDENT = 7

COMMON_WORDS = (
    "the of and a to in is you that it he was for on are as with his they I at be this have "
    "from or one had by word but not what all were we when your can said there use an each "
    "which she do how their if will up other about out many then them these so some her would "
    "make like him into time has look two more write go see number no way could people my than "
    "first water been call who oil its now find long down day did get come made may part over "
    "new sound take only little work know place year live me back give most very after thing "
    "our just name good sentence man think say great where help through much before line right "
    "too mean old any same tell boy follow came want show also around form three small set put "
    "end does another well large must big even such because turn here why ask went men read "
    "need land different home us move try kind hand picture again change off play spell air "
    "away animal house point page letter mother answer found study still learn should world"
).split()
ONSETS = "b c d f g h k l m n p r s t v w y br ch st th tr sh".split()
VOWELS = "a e i o u a e i o ea ee ai ou io".split()
CODAS = ["", "", "", "n", "r", "s", "t", "l", "nd", "st", "ng", "ck", "m"]
SUFFIXES = ["", "", "", "", "s", "ed", "ing", "er", "ion", "ly", "ness", "ment"]

C_TYPES = ("int", "size_t", "char *", "const char *", "unsigned", "long", "double",
           "struct node *", "uint32_t", "bool")
C_NAMES = ("buf len count index state node ptr value result flags size offset table entry ctx "
           "item key data next prev head tail err status mode config list name pos limit "
           "start end total hash block page file path line width").split()
C_VERBS = "get set init free alloc read write find parse update check reset copy compare".split()
C_HEADERS = ("stdio stdlib string stdint errno assert unistd fcntl sys/types sys/stat limits "
             "ctype math time signal").split()
C_TEMPLATES = (
    "if ({a} {cmp} {b}) {{", "for ({i} = 0; {i} < {a}; {i}++) {{", "while ({a} != NULL) {{",
    "{a} = {b} {op} {c};", "{a} = {f}({b}, {c});", "{a}->{b} = {c};",
    "{a}[{i}] = {b}[{i}] {op} {n};", "{t} {a} = {n};", "return {a};", "return {f}({a}, {n});",
    "{f}({a}, {b});", "}}", "}}", "}}", "}} else {{", "break;", "continue;", "return 0;",
    "return -1;", "", "", "case {N}:", "/* {comment} */", "// {comment}", "#include <{h}.h>",
    "#define {M} {n}", "static {t} {f}({t} {a}, {t} {b})", "{{",
    'fprintf(stderr, "{comment}: %s\\n", {a});', "assert({a} {cmp} {b});",
)

CSV_HEADER = b"id,date,time,region,product,quantity,unit_price,discount,total,status\n"
REGIONS = [b"north", b"south", b"east", b"west", b"central", b"overseas"]
PRODUCTS = [b"widget", b"gadget", b"sprocket", b"flange", b"bracket", b"gear", b"valve",
            b"bearing", b"spring", b"gasket", b"coupling", b"hinge"]
STATUSES = [b"shipped", b"pending", b"returned", b"cancelled"]

# A database-like fixed-size record; explicit little-endian fields, so the bytes are the same
# on any machine.
RECORD = np.dtype([("id", "<u4"), ("time", "<u4"), ("kind", "u1"), ("flags", "u1"),
                   ("count", "<u2"), ("value", "<i4"), ("ratio", "<f4"), ("name", "S8"),
                   ("reserved", "<u4")])
RECORD_NAMES = [b"alpha", b"beta", b"gamma", b"delta", b"omega", b"sigma", b"kappa", b"zeta"]


def corpus_bytes(size: int, seed: int) -> bytes:
    """Exactly `size` bytes of mixed text and binary, like a file system's contents."""
    rng = Stream(seed, CORPUS_PURPOSE)
    makers = _CorpusMakers(rng)
    produced = dict.fromkeys(CORPUS_MIX, 0)
    parts, total = [], 0
    while total < size:
        # The kind furthest below its share goes next, and no further than its share (so a
        # large file cannot skew a small corpus's mix, nor its compression ratio).
        kind = max(CORPUS_MIX, key=lambda k: CORPUS_MIX[k] * (total + 1) - produced[k])
        budget = max(256, round(CORPUS_MIX[kind] * size) - produced[kind])
        data = makers.make(kind, min(_file_size(rng, size), budget))
        parts.append(data)
        produced[kind] += len(data)
        total += len(data)
    return b"".join(parts)[:size]


def _file_size(rng: Stream, corpus_size: int) -> int:
    """Roughly log-uniform from 4 KB to 512 KB (integers only), capped at an eighth of the
    corpus so that a small corpus still holds several files."""
    base = 4096 << rng.below(7)
    return max(256, min(base + rng.below(base), corpus_size // 8))


class _CorpusMakers:
    """The per-corpus material (vocabulary, code lines) and one maker per file kind."""

    def __init__(self, rng: Stream):
        self.rng = rng
        self.vocabulary = COMMON_WORDS + _pseudo_words(rng, 2500)
        units = _with_phrases(rng, self.vocabulary)
        self.prose_units = len(units)
        self.prose_table = _Pieces([u.encode() for u in units] + list(SEPARATORS))
        self.unit_cdf = zipf_cdf(len(units))
        self.code = _CodePool([_code_line(rng, self.vocabulary) for _ in range(CODE_POOL)])

    def make(self, kind: str, n: int) -> bytes:
        """n bytes of one kind; makers may overshoot, so cut to n."""
        return getattr(self, f"_{kind}")(n)[:n]

    def _prose(self, n: int) -> bytes:
        return _prose(self.rng, self.prose_table, self.prose_units, self.unit_cdf, n)

    def _code(self, n: int) -> bytes:
        return _code(self.rng, self.code, n)

    def _csv(self, n: int) -> bytes:
        return CSV_HEADER + _csv_rows(self.rng, n // 55 + 1)

    def _records(self, n: int) -> bytes:
        return _records(self.rng, n // RECORD.itemsize + 1)

    def _sparse(self, n: int) -> bytes:
        return _sparse(self.rng, n)

    def _random(self, n: int) -> bytes:
        return self.rng.bytes(n)


class _Pieces:
    """A table of byte strings joined by index in one numpy gather (no per-piece Python)."""

    def __init__(self, pieces: list[bytes]):
        self.blob = np.frombuffer(b"".join(pieces), np.uint8)
        self.lengths = np.array([len(p) for p in pieces], np.int64)
        self.offsets = np.cumsum(self.lengths) - self.lengths

    def join(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The concatenation of pieces[ids] as a uint8 array, and where each piece starts."""
        lengths = self.lengths[ids]
        starts = np.cumsum(lengths) - lengths
        source = np.repeat(self.offsets[ids] - starts, lengths) + np.arange(lengths.sum())
        return self.blob[source], starts


def _pseudo_words(rng: Stream, count: int) -> list[str]:
    """Pronounceable made-up words, shortest first: Zipf ranks then make short words common,
    as in real text."""
    words: dict[str, None] = {}
    while len(words) < count:
        syllables = 1 + rng.below(3)
        word = "".join(rng.pick(ONSETS) + rng.pick(VOWELS) + rng.pick(CODAS)
                       for _ in range(syllables)) + rng.pick(SUFFIXES)
        words.setdefault(word)
    return sorted(words, key=len)


def _with_phrases(rng: Stream, words: list[str], count: int = PHRASES,
                  every: int = PHRASE_EVERY) -> list[str]:
    """The words ranked for Zipf sampling, with `count` recurring 2-4 word phrases ranked among
    them (one after every `every` words from rank 20 on, so none outranks the commonest
    words): real prose repeats "of the", "in the" and the like, which gives LZ77 the longer
    matches that independent words would not."""
    cdf = zipf_cdf(len(words))
    phrases = [" ".join(words[i] for i in zipf(rng, cdf, 2 + rng.below(3)))
               for _ in range(count)]
    units = words[:20]
    for rank, word in enumerate(words[20:]):
        units.append(word)
        if rank % every == 0 and rank // every < count:
            units.append(phrases[rank // every])
    return units


# Separators after a word; wrapping turns the first three into their line-ending forms.
SEPARATORS = (b" ", b", ", b". ", b"\n", b",\n", b".\n", b".\n\n")
_WRAPPED = np.array([3, 4, 5, 3, 4, 5, 6])
_SENTENCE_END = np.array([False, False, True, False, False, True, True])


def _prose(rng: Stream, table: _Pieces, words: int, cdf: np.ndarray, n: int) -> bytes:
    """Zipf-distributed words (the first `words` pieces of table, then SEPARATORS) in
    sentences (capitalised, commas, full stops), wrapped at about LINE_WIDTH columns, in
    paragraphs."""
    count = n // 5 + 16
    ids = zipf(rng, cdf, count)
    draw = rng.floats(count)
    sep = np.where(draw < 0.07, 2, np.where(draw < 0.15, 1, 0))
    sep[(sep == 2) & (rng.floats(count) < 0.1)] = 6
    # Wrap: measured from the last paragraph break, the first separator past each multiple of
    # the width ends the line. (Wrapping keeps lengths, so positions hold.)
    ends = np.cumsum(table.lengths[ids] + table.lengths[words + sep])
    sep_at = ends - table.lengths[words + sep]
    paragraph = np.maximum.accumulate(np.where(sep == 6, ends, 0))
    base = np.concatenate(([0], paragraph[:-1]))
    line = (sep_at - base) // LINE_WIDTH
    previous = np.where(base[1:] == base[:-1], line[:-1], 0)
    wrap = np.concatenate(([False], line[1:] > previous))
    sep = np.where(wrap, _WRAPPED[sep], sep)
    tokens = np.empty(2 * count, np.int64)
    tokens[0::2], tokens[1::2] = ids, words + sep
    text, starts = table.join(tokens)
    capital = np.concatenate(([0], starts[2::2][_SENTENCE_END[sep[:-1]]]))
    lower = (text[capital] >= ord("a")) & (text[capital] <= ord("z"))
    text[capital[lower]] -= 32
    return text.tobytes()


def _code_line(rng: Stream, vocabulary: list[str]) -> bytes:
    """One line of C-like code from a template, with plausible identifiers."""
    comment = " ".join(rng.pick(vocabulary[:400]) for _ in range(3 + rng.below(6)))
    line = rng.pick(C_TEMPLATES).format(
        a=_c_name(rng), b=_c_name(rng), c=_c_name(rng), i=rng.pick("ijkn"), n=rng.below(1000),
        N=rng.below(64), M=_c_name(rng).upper(), t=rng.pick(C_TYPES),
        f=rng.pick(C_VERBS) + "_" + rng.pick(C_NAMES), h=rng.pick(C_HEADERS),
        op=rng.pick("+-*/&|^"), cmp=rng.pick(("<", ">", "==", "!=", "<=", ">=")),
        comment=comment)
    return line.encode() + b"\n"


def _c_name(rng: Stream) -> str:
    return rng.pick(C_NAMES) + ("_" + rng.pick(C_NAMES) if rng.chance(0.3) else "")


class _CodePool:
    """The corpus's code lines, each with what indentation needs to know about it."""

    def __init__(self, lines: list[bytes]):
        self.lines = lines
        self.opens = np.array([line.endswith(b"{\n") for line in lines], np.int64)
        self.closes = np.array([line.startswith(b"}") for line in lines], np.int64)
        # Blank lines and preprocessor lines sit at column 0, as in real code.
        self.flush = np.array([line == b"\n" or line.startswith(b"#") for line in lines])
        self.tables = {unit: _Pieces([unit * d for d in range(MAX_INDENT + 1)] + lines)
                       for unit in (b"\t", b"    ")}


def _code(rng: Stream, pool: _CodePool, n: int) -> bytes:
    """A source file: lines from the shared pool, a quarter of them from a few dozen this file
    keeps reusing (its own idioms), indented by block depth with tabs or spaces."""
    count = n // 24 + 16
    ids = rng.belows(len(pool.lines), count)
    local = rng.belows(len(pool.lines), 64)[zipf(rng, zipf_cdf(64), count)]
    ids = np.where(rng.floats(count) < 0.25, local, ids)
    closes = pool.closes[ids]
    depth = np.cumsum(pool.opens[ids] - closes)
    depth -= np.minimum.accumulate(np.minimum(depth, 0))   # never below column 0
    indent = np.clip(np.concatenate(([0], depth[:-1])) - closes, 0, MAX_INDENT)
    indent[pool.flush[ids]] = 0
    table = pool.tables[b"\t" if rng.chance(0.3) else b"    "]
    tokens = np.empty(2 * count, np.int64)
    tokens[0::2], tokens[1::2] = indent, MAX_INDENT + 1 + ids
    return table.join(tokens)[0].tobytes()


def _csv_rows(rng: Stream, rows: int) -> bytes:
    """Sales-like records: sequential ids and dates, small categorical fields, prices."""
    first = rng.below(10 ** 6)
    days = rng.below(3000) + np.cumsum(rng.belows(100, rows) < 3)
    seconds = rng.belows(86400, rows)
    quantity = 1 + np.minimum(zipf(rng, zipf_cdf(200), rows), 199)
    price = 99 + rng.belows(50000, rows)
    discount = np.where(rng.belows(4, rows) == 0, rng.belows(30, rows), 0)
    total = quantity * price * (100 - discount) // 100
    cols = _Columns(rows)
    cols.number(first + np.arange(rows), 8)
    cols.text(b",20")
    cols.number(15 + days // 336, 2, pad=True)   # 28-day months: only the look matters
    cols.text(b"-")
    cols.number(days // 28 % 12 + 1, 2, pad=True)
    cols.text(b"-")
    cols.number(days % 28 + 1, 2, pad=True)
    cols.text(b",")
    cols.number(seconds // 3600, 2, pad=True)
    cols.text(b":")
    cols.number(seconds // 60 % 60, 2, pad=True)
    cols.text(b":")
    cols.number(seconds % 60, 2, pad=True)
    cols.text(b",")
    cols.choice(REGIONS, zipf(rng, zipf_cdf(len(REGIONS)), rows))
    cols.text(b",")
    cols.choice(PRODUCTS, zipf(rng, zipf_cdf(len(PRODUCTS)), rows))
    cols.text(b",")
    cols.number(quantity, 3)
    cols.text(b",")
    cols.money(price)
    cols.text(b",")
    cols.number(discount, 2)
    cols.text(b",")
    cols.money(total)
    cols.text(b",")
    cols.choice(STATUSES, zipf(rng, zipf_cdf(len(STATUSES)), rows))
    cols.text(b"\n")
    return cols.tobytes()


class _Columns:
    """Text rows built column by column as fixed-width byte matrices plus masks of which bytes
    are real; the masked matrix read row by row is the text, so variable-width fields need no
    per-row Python."""

    def __init__(self, rows: int):
        self.rows = rows
        self.cells: list[np.ndarray] = []
        self.masks: list[np.ndarray] = []

    def text(self, constant: bytes) -> None:
        row = np.frombuffer(constant, np.uint8)
        self.cells.append(np.broadcast_to(row, (self.rows, len(row))))
        self.masks.append(np.ones((self.rows, len(row)), bool))

    def number(self, values: np.ndarray, width: int, pad: bool = False) -> None:
        """Non-negative integers in decimal, at most `width` digits; zero-padded if `pad`."""
        values = np.asarray(values, np.int64)[:, None]
        powers = 10 ** np.arange(width - 1, -1, -1, dtype=np.int64)
        self.cells.append((values // powers % 10 + ord("0")).astype(np.uint8))
        digits = 1 + (values >= powers[:-1]).sum(axis=1, keepdims=True)
        self.masks.append(np.ones((self.rows, width), bool) if pad
                          else np.arange(width) >= width - digits)

    def money(self, cents: np.ndarray) -> None:
        """Amounts as units.cents, e.g. 1234.05."""
        self.number(cents // 100, 8)
        self.text(b".")
        self.number(cents % 100, 2, pad=True)

    def choice(self, words: list[bytes], ids: np.ndarray) -> None:
        width = max(map(len, words))
        table = np.array([np.frombuffer(w.ljust(width), np.uint8) for w in words])
        lengths = np.array([len(w) for w in words])
        self.cells.append(table[ids])
        self.masks.append(np.arange(width) < lengths[ids][:, None])

    def tobytes(self) -> bytes:
        return np.concatenate(self.cells, axis=1)[np.concatenate(self.masks, axis=1)].tobytes()


def _records(rng: Stream, count: int) -> bytes:
    """A header and fixed-size little-endian records: sequential ids and times, small
    alphabets in kind/flags/name, a slowly wandering value."""
    rec = np.zeros(count, RECORD)
    rec["id"] = rng.below(1 << 20) + np.arange(count)
    rec["time"] = 1_600_000_000 + rng.below(1 << 24) + np.cumsum(rng.belows(16, count))
    rec["kind"] = zipf(rng, zipf_cdf(6), count)
    rec["flags"] = np.array([0, 1, 3, 0x80])[rng.belows(4, count)]
    rec["count"] = zipf(rng, zipf_cdf(300), count)
    rec["value"] = np.cumsum(rng.belows(21, count) - 10)
    rec["ratio"] = rec["count"].astype(np.float32) / np.float32(64)   # exact in float32
    rec["name"] = np.array(RECORD_NAMES)[zipf(rng, zipf_cdf(len(RECORD_NAMES)), count)]
    header = struct.pack("<8sII", b"FSWPREC1", count, RECORD.itemsize)
    return header + rec.tobytes()


def _sparse(rng: Stream, n: int) -> bytes:
    """Low-entropy data like disk images and tables: zero and 0xff runs, counters, small
    alphabets, and short random islands."""
    parts, total = [], 0
    while total < n:
        length = 16 + rng.below(2048)
        style = rng.below(5)
        if style == 0:
            part = b"\0" * (length * 2)
        elif style == 1:
            part = b"\xff" * length
        elif style == 2:
            part = (rng.below(1 << 16) + np.arange(length // 2)).astype("<u2").tobytes()
        elif style == 3:
            part = (rng.raw(length) % np.uint64(4)).astype(np.uint8).tobytes()
        else:
            part = rng.bytes(length // 8)
        parts.append(part)
        total += len(part)
    return b"".join(parts)
