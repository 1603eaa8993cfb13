#!/usr/bin/env python3
"""Checks that the code keeps to its layers (docs/architecture.md).

  tools/check_layers.py                 the include graph of src/
  tools/check_layers.py --nm BUILD      also: the client programs in BUILD
                                        hold no handler or hub code

Prints one line per violation as FILE:LINE: reason, and exits 1 if any.
The rules are the data below; a new layer is one row in LAYERS (and one
word in the Makefile's LAYERS).
"""
import os
import re
import subprocess
import sys

# Layer (directory under src/) -> the layers its files may include, besides
# its own headers and the generated ones in gen/.  A directory that is not
# listed here and not in PROGRAMS fails the check, so a new layer must say
# where it sits.
LAYERS = {
    "common": [],
    "h2": ["common"],
    "http1": ["common"],
    "grpc": ["h2", "http1", "common"],
    "core": ["common"],
    "store": ["common"],
    "cluster": ["common"],
    "hub": ["cluster", "core", "store", "common"],
    "rpc": ["hub", "grpc", "store", "common"],
    "web": ["common"],
}
# The programs sit on top and may include any layer.
PROGRAMS = ["main.c", "server", "cli", "runner"]

# System headers allowed only in some places: (pattern, what, places).  A
# place is a directory under src/ or one file.
CONFINED = [
    (re.compile(r"^nghttp2/"), "nghttp2", ["h2"]),
    (re.compile(r"^http_parser\.h$"), "http-parser", ["http1"]),
    (re.compile(r"^openssl/|^event2/bufferevent_ssl\.h$"), "OpenSSL", ["h2", "store/auth.c"]),
    (re.compile(r"^nats/"), "libnats", ["cluster"]),
]

# Programs that talk to the server over gRPC and must link no handler (rpc)
# or session-path (hub) object: no symbol an archive below defines, and no
# symbol with a prefix below (protobuf-c's generated compass__ names are
# message code, not handlers).
CLIENT_PROGRAMS = ["agenthub", "agenthub-runner"]
SERVER_ONLY_ARCHIVES = ["librpc.a", "libhub.a"]
FORBIDDEN_SYMBOL = re.compile(r"^(compass_(?!_)|runner_service_|resource_|hub_)")

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def place_of(rel):
    """The layer or program part of src/REL: its first path component."""
    return rel.split("/", 1)[0]


def allowed_in(rel, places):
    return any(rel == p or rel.startswith(p + "/") for p in places)


def check_file(root, path, problems):
    rel = os.path.relpath(path, os.path.join(root, "src"))
    part = place_of(rel)
    is_program = part in PROGRAMS
    if not is_program and part not in LAYERS:
        problems.append(f"src/{rel}:1: src/{part}/ is in no layer: add it to LAYERS in {sys.argv[0]}")
        return
    with open(path, encoding="utf-8", errors="replace") as f:
        for lineno, line in enumerate(f, 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            kind, name = m.groups()
            spelled = f"<{name}>" if kind == "<" else f'"{name}"'
            for pattern, what, places in CONFINED:
                if pattern.search(name) and not allowed_in(rel, places):
                    problems.append(
                        f"src/{rel}:{lineno}: #include {spelled}: "
                        f"{what} is used only in {', '.join('src/' + p for p in places)}"
                    )
            if kind != '"' or is_program:
                continue
            # Generated headers (gen/) may be used everywhere; a name next
            # to the including file is its own layer's.
            if os.path.exists(os.path.join(root, "gen", name)):
                continue
            if os.path.exists(os.path.join(os.path.dirname(path), name)) and "/" not in name:
                continue
            target = os.path.join(root, "src", name)
            if not os.path.exists(target):
                problems.append(f"src/{rel}:{lineno}: #include {spelled}: no such header in src/ or gen/")
                continue
            to = place_of(name)
            if to == part or to in LAYERS[part]:
                continue
            may = ", ".join(LAYERS[part]) or "nothing but itself"
            where = "a program" if to in PROGRAMS else f"layer {to}"
            problems.append(
                f"src/{rel}:{lineno}: #include {spelled}: {part} may not include {where} "
                f"({part} may include {may})"
            )


def defined_symbols(path):
    out = subprocess.run(
        ["nm", "--defined-only", "--extern-only", path],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    syms = set()
    for line in out.splitlines():
        fields = line.split()
        if len(fields) == 3:
            syms.add(fields[2])
    return syms


def check_programs(build, problems):
    server_only = set()
    for archive in SERVER_ONLY_ARCHIVES:
        path = os.path.join(build, archive)
        if not os.path.exists(path):
            problems.append(f"{path}:1: missing: build it first (make all)")
            continue
        server_only |= defined_symbols(path)
    for prog in CLIENT_PROGRAMS:
        path = os.path.join(build, prog)
        if not os.path.exists(path):
            problems.append(f"{path}:1: missing: build it first (make all)")
            continue
        for sym in sorted(defined_symbols(path)):
            if sym in server_only:
                problems.append(f"{path}:1: links {sym}, defined in {' or '.join(SERVER_ONLY_ARCHIVES)}")
            elif FORBIDDEN_SYMBOL.match(sym):
                problems.append(f"{path}:1: links {sym}: handler and hub code belong to agenthubd only")


def main(argv):
    root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    problems = []
    for dirpath, dirnames, filenames in os.walk(os.path.join(root, "src")):
        dirnames.sort()
        for name in sorted(filenames):
            if name.endswith((".c", ".h")):
                check_file(root, os.path.join(dirpath, name), problems)
    if len(argv) == 3 and argv[1] == "--nm":
        check_programs(argv[2], problems)
    elif len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(f"check_layers: {len(problems)} violation(s) of the layering rules", file=sys.stderr)
        return 1
    print("check_layers: include graph and client programs keep to the layers")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
