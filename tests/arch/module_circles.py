#!/usr/bin/env python3
"""Circles of imports between the files of each crate (issue 32: "no circle of more than a
handful of files inside any crate"). A measurement, not a test: it prints, per crate, every
set of modules that reach each other through paths (`crate::`, `super::`, `self::`, a child
module's name, `use` groups), largest first. `mod x;` lines are not edges; tests are left out.

usage: python3 tests/arch/module_circles.py [--edges] [CRATE ...]   (default: every crate)
  --edges  also print the edges inside each crate's largest circle

It reads source text, not the compiler's view: a path spelled through a re-export counts as an
edge to the module that re-exports it."""

from __future__ import annotations

import re
import sys
from pathlib import Path

CRATES = Path(__file__).resolve().parents[2] / "crates"


def modules(src: Path) -> dict[str, Path]:
    """Module path ("" for the crate root, "a::b") → its file."""
    out = {}
    for path in src.rglob("*.rs"):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] in ("mod", "lib", "main"):
            parts = parts[:-1]
        out["::".join(parts)] = path
    return out


def code_of(path: Path) -> str:
    """The file without its unit tests, `mod x;` lines and line comments."""
    text = path.read_text()
    cut = re.search(r"#\[cfg\(test\)\]\s*(#\[[^\]]*\]\s*)*mod tests", text)
    if cut:
        text = text[: cut.start()]
    text = re.sub(r"^\s*(pub(\([^)]*\))?\s+)?mod \w+;", "", text, flags=re.M)
    return re.sub(r"//[^\n]*", "", text)


def use_paths(text: str) -> list[str]:
    """Every path a `use` names, its `{…}` groups flattened."""
    out: list[str] = []

    def flatten(prefix: str, body: str) -> None:
        body = body.strip()
        group = re.match(r"^([\w:]*?)\{(.*)\}$", body, re.S)
        if not group:
            out.append(prefix + body.split(" as ")[0].strip())
            return
        head, depth, item = prefix + group.group(1), 0, ""
        for ch in group.group(2):
            depth += (ch == "{") - (ch == "}")
            if ch == "," and depth == 0:
                flatten(head, item)
                item = ""
            else:
                item += ch
        if item.strip():
            flatten(head, item)

    for m in re.finditer(r"\buse\s+([^;]+);", text, re.S):
        flatten("", m.group(1))
    return out


def edges_of(mods: dict[str, Path]) -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {m: set() for m in mods}
    for module, path in mods.items():
        text = code_of(path)
        paths = re.findall(r"\b((?:crate|super|self|[a-z_]\w*)(?:::[A-Za-z_]\w*)+)", text) + use_paths(text)
        here = module.split("::") if module else []
        for p in paths:
            segs = [s for s in p.split("::") if s]
            base = list(here)
            if segs[0] == "crate":
                base, segs = [], segs[1:]
            elif segs[0] == "self":
                segs = segs[1:]
            elif segs[0] == "super":
                while segs and segs[0] == "super":
                    base, segs = base[:-1], segs[1:]
            elif "::".join(base + segs[:1]) not in mods:
                continue  # another crate's path
            full = base + segs
            # The longest module prefix is the target (an item of the root is an edge to it).
            target = next(("::".join(full[:k]) for k in range(len(full), -1, -1) if "::".join(full[:k]) in mods), None)
            if target is not None and target != module:
                edges[module].add(target)
    return edges


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), largest first."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for v in edges:
        if v not in index:
            visit(v)
    return sorted(found, key=len, reverse=True)


def main(argv: list[str]) -> None:
    show_edges = "--edges" in argv
    names = [a for a in argv if a != "--edges"] or sorted(p.name for p in CRATES.iterdir() if (p / "src").is_dir())
    for name in names:
        edges = edges_of(modules(CRATES / name / "src"))
        found = circles(edges)
        label = lambda m: m or "lib"  # noqa: E731
        print(f"{name}: " + ("; ".join(f"{len(c)} {[label(m) for m in c]}" for c in found) or "none"))
        if show_edges and found:
            for m in found[0]:
                print(f"  {label(m)} -> {sorted(label(t) for t in edges[m] if t in found[0])}")


if __name__ == "__main__":
    main(sys.argv[1:])
