"""Gather the component list of one build: what every enabled part declares (Part.sbom), plus
one `file` component per artifact in images/, and the dependency graph between them.

The graph is image → part → source and comes from the plan itself, not from a hand-kept table:
each Step names the files it `needs` and makes (`outputs`), so an artifact depends on
  - the components its part declares (a part's sbom(): TF-A's source, U-Boot's, the rkbin
    blobs, Buildroot's target packages...), and
  - the artifacts (or, through intermediate files in build/, the parts) its step reads.
An artifact whose step reads a file no part makes and no part declares is still listed, with
its dependencies marked incomplete (`complete=False`), so the SBOM says where it stops knowing.

Soft failure, only where a component's input is absent: a part whose sbom() raises SeedfwError
(nothing built yet, a pinned file not in the cache) is left out and named in `notes`; every
other error is an error.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from .. import __version__
from ..errors import SeedfwError
from .. import util
from .model import OWN_LICENCE, Component, combined_licence, file_hashes, purl, supplier_url

ROOT_REF = "firmware"


@dataclass
class Inventory:
    root: Component
    components: list[Component]
    notes: list[str] = field(default_factory=list)

    def by_ref(self) -> dict[str, Component]:
        return {c.ref: c for c in [self.root, *self.components]}


def _steps(part, ctx):
    try:
        return part.steps(ctx)
    except SeedfwError:
        return []


def collect(ctx, hasher=None) -> Inventory:
    from .. import parts

    hasher = hasher or util.StatCache(ctx.build_dir("sbom") / "hashes.json", file_hashes)
    if not ctx.outputs:                 # outside a build (invoke sbom): the parts' declarations
        parts.declare(ctx)
    enabled = parts.enabled(ctx)
    notes: list[str] = []
    comps: list[Component] = []
    declared: dict[str, list[str]] = {}
    for part in enabled:
        try:
            got = part.sbom(ctx)
        except SeedfwError as exc:
            notes.append(f"{part.name}: components left out: {exc.line()}")
            continue
        seen = {c.ref for c in comps}
        dup = [c for c in got if c.ref in seen]        # the same blob declared by two parts
        got = [c for c in got if c.ref not in seen]
        for c in got:
            c.check()
            c.supplier_url = c.supplier_url or supplier_url(c.supplier)
            c.hash_sources(hasher)
            if not c.hashes and c.scope == "required":
                notes.append(f"{c.name}: no hash (its input is absent)")
        comps += got
        declared[part.name] = [c.ref for c in got + dup if c.scope == "required"]
        notes += [n for c in got for n in [c.properties.pop("seedfw:sbom-note", "")] if n]

    # What each step makes and reads, by file: the plan's own link of roles to files
    # (seedfw.plan.roles), on fresh steps, so the graph is the one the build ran.
    from ..plan.roles import link
    steps = {s.name: (part.name, s) for part in enabled for s in _steps(part, ctx)}
    declared_outputs = [(owner, o) for o in ctx.outputs
                        for owner in [ctx.owners.get(Path(o.path))] if owner]
    made_by: dict[Path, tuple[str, tuple[Path, ...], tuple[str, ...]]] = {}
    try:
        link({name: s for name, (_, s) in steps.items()}, declared_outputs, [])
    except SeedfwError as exc:
        notes.append(f"dependency graph left incomplete: {exc.line()}")
    for owner, step in steps.values():
        for out in step.outputs:
            made_by[Path(out)] = (owner, tuple(Path(n) for n in getattr(step, "files", ())),
                                  tuple(getattr(step, "tools", ())))
    artifacts = {}
    for owner, o in declared_outputs:
        if o.listed and Path(o.path).is_file():
            artifacts.setdefault(Path(o.path), owner)

    # The host tools the steps ran (Step.tools), as build-scope components: a step's command is
    # a Debian package's file (seedfw.sbom.hosttools), or a build-scope component its part
    # declared (Buildroot's relocated toolchain). One the machine cannot name leaves the files
    # it made with incomplete dependencies.
    from . import hosttools
    known = {c.ref for c in comps}
    commands = {t for _o, _f, tools in made_by.values() for t in tools if t not in known}
    tool_refs, host, host_notes = hosttools.components(commands, hasher)
    notes += host_notes
    comps += host
    tool_refs.update({t: t for t in known})

    def ref_of(path: Path) -> str:
        return "file:" + os.path.relpath(path, ctx.outdir)

    def deps_of(path: Path, owner: str, seen: set) -> tuple[set[str], bool]:
        refs, complete = set(declared.get(owner, [])), True
        got = made_by.get(path)
        if got is None:
            return refs, False
        for tool in got[2]:
            if tool in tool_refs:
                refs.add(tool_refs[tool])
            else:
                complete = False
        for need in got[1]:
            if need in seen:
                continue
            seen.add(need)
            if need in artifacts and need != path:
                refs.add(ref_of(need))
            elif need in made_by:
                more, ok = deps_of(need, made_by[need][0], seen)
                refs |= more
                complete &= ok
            # else: a source or board file, hashed in the part's own components
        return refs, complete

    by_ref = {c.ref: c for c in comps}
    files = []
    for path, owner in sorted(artifacts.items()):
        deps, complete = deps_of(path, owner, {path})
        c = Component(ref=ref_of(path), name=path.name, version=ctx.build_id, kind="file",
                      licence=OWN_LICENCE, supplier="seedfw", supplier_url=supplier_url("seedfw"),
                      purl=purl("generic", path.name, ctx.build_id, namespace="seedfw",
                                board=ctx.board.name),
                      description=f"build artifact of part {owner} "
                                  f"({os.path.relpath(path, ctx.outdir)})",
                      hashes=hasher(path), filename=path.name,
                      depends=sorted(deps - {ref_of(path)}), complete=complete,
                      properties={"seedfw:part": owner})
        files.append(c)
    # An artifact's concluded licence: seedfw's (it made the file) and every component's in it,
    # through the artifacts it contains (in dependency order: an artifact's inputs first).
    done = {f.ref: f for f in files}
    def licences(ref, seen=()):
        c = by_ref.get(ref) or done.get(ref)
        if c is None or ref in seen or c.scope == "build":     # a compiler's licence is not
            return set()                                       # the licence of what it made
        if c.kind != "file":
            return {c.licence}
        return {OWN_LICENCE}.union(*(licences(d, seen + (ref,)) for d in c.depends))
    for f in files:
        f.licence = combined_licence(licences(f.ref))
    hasher.save()
    # Build-scope components nothing else names (Buildroot, the cross toolchain, the model
    # compiler, the host tools the rootfs steps ran): the firmware itself was built with them.
    named = {d for c in comps + files for d in c.depends}
    orphans = sorted(c.ref for c in comps if c.scope == "build" and c.ref not in named)
    root = Component(ref=ROOT_REF, name=f"seedfw-{ctx.board.name}", version=ctx.build_id,
                     kind="firmware", supplier="seedfw", licence=OWN_LICENCE,
                     supplier_url=supplier_url("seedfw"),
                     purl=purl("generic", f"seedfw-{ctx.board.name}", ctx.build_id,
                               namespace="seedfw"),
                     description=f"seedfw {__version__} firmware for board {ctx.board.name}",
                     depends=[f.ref for f in files] + orphans,
                     properties={"seedfw:version": __version__})
    # The firmware is delivered as the files the board reads at boot (Output.at_boot).
    boot = {o.name for o in ctx.outputs if o.declared and o.at_boot}
    root.delivered_as = sorted(f.ref for f in files if f.name in boot)
    root.properties["seedfw:delivered-as"] = ", ".join(f.name for f in files if f.name in boot)
    root.licence = combined_licence({OWN_LICENCE} | {f.licence for f in files})
    return Inventory(root, comps + files, notes)
