"""A campaign's folder for the distro report's tests, without a sweep: campaign.json over three
recorded results (report_fixture.sweep_doc: a run recorded in a store as a sweep records one,
writer.write's document), Debian's flags as the base and one change at a time on top.

- alpha, beta, gamma: swept. +O3 is 10% faster on each, with text +30% and build CPU +20%;
  +frame-pointers 2% slower on alpha and beta and undecided on gamma; +lto equivalent where it
  ran, and on beta it fails the package's own tests (so the sweep left it untimed): broken.
- delta: swept, but its results file is gone.
- eps: failed at generate, with the error `new` gave.
gamma's campaign name starts with "=", as a spreadsheet formula would.
"""

from __future__ import annotations

import json
from pathlib import Path

import report_fixture as rf

BASE = ["-O2", "-g", "-fstack-protector-strong"]
CHANGES = {"gcc-debian": ("debian", []), "gcc-debian.aa": ("debian", []),
           "gcc-O3": ("O3", ["-O3"]), "gcc-frame-pointers": ("frame-pointers",
                                                          ["-fno-omit-frame-pointer"]),
           "gcc-lto": ("lto", ["-flto"])}
# package -> variant -> (true ratio, noise CV); None: never timed
RATIOS = {
    "alpha": {"gcc-O3": (0.90, 0.004), "gcc-frame-pointers": (1.02, 0.003),
              "gcc-lto": (1.0, 0.002)},
    "beta": {"gcc-O3": (0.90, 0.004), "gcc-frame-pointers": (1.02, 0.003), "gcc-lto": None},
    "=gamma": {"gcc-O3": (0.91, 0.004), "gcc-frame-pointers": (1.005, 0.03),
               "gcc-lto": (1.0, 0.002)},
}
FAILED = "no C or C++ executable among its binary packages' files; give --binary"
SECONDS = {"alpha": (61.0, 600.0), "beta": (45.5, 420.0), "=gamma": (30.0, 300.0),
           "delta": (20.0, 100.0), "eps": (12.5, None)}


def results(name: str, seed: int) -> dict:
    """A package's results.json: its sizes, build CPU and own tests on every build."""
    plan = {vid: ([*BASE, *extra], *(RATIOS[name].get(vid, (1.0, 0.004)) or (None, 0)))
            for vid, (_, extra) in CHANGES.items()}
    factors = {vid: {"compiler": "gcc", "change": change} for vid, (change, _) in CHANGES.items()}
    doc = rf.sweep_doc(plan, seed=seed, factors=factors)
    doc["target"], doc["target_version"] = name.lstrip("="), f"1.{seed}-2"
    doc["distro"] = {"name": "debian", "source": "dpkg-buildflags", "flags": BASE}
    for v in doc["variants"]:
        grow = {"gcc-O3": (1.3, 1.2)}.get(v["id"], (1.0, 1.0))
        v["build"].update(sizes={"text": int(100_000 * grow[0]), "data": 10, "bss": 5},
                          cpu_seconds=10.0 * grow[1],
                          package_tests={"status": "passed", "command": ["make", "check"],
                                         "seconds": 3.0, "log": "builds/x/tests.log"})
        if name == "beta" and v["id"] == "gcc-lto":
            v["build"]["package_tests"].update(status="failed", tail="FAIL: test-roundtrip")
    return doc


def campaign(folder: Path) -> Path:
    """The campaign's folder with its campaign.json (returned) and three results files."""
    folder.mkdir(parents=True, exist_ok=True)
    packages = []
    for line, name in enumerate(["alpha", "beta", "=gamma", "delta", "eps"], start=1):
        generate, sweep = SECONDS[name]
        entry = {"name": name, "package": name.lstrip("=") + "-src", "line": line,
                 "status": "swept", "target": f"p{line}/target.toml",
                 "results": f"p{line}/results.json", "generate_seconds": generate,
                 "sweep_seconds": sweep}
        if name in RATIOS:
            rf.write(folder / f"p{line}", results(name, seed=line))
        if name == "eps":
            entry.update(status="failed", failed_stage="generate", error=f"{FAILED} {rf.EVIL}",
                         results=None, target=None)
        packages.append(entry)
    path = folder / "campaign.json"
    path.write_text(json.dumps({"schema": "flagsweep-campaign/1", "packages_file": "list.txt",
                                "recipe": "distro", "packages": packages}, indent=1))
    return path
