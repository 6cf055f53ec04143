#!/usr/bin/python3
"""Checks that every #include between mpipe's libraries follows their CMake dependencies.

Usage: /usr/bin/python3 scripts/check_layering.py [SOURCE_DIR]   (the ctest `layering`)

Each lib/<name>/CMakeLists.txt declares `mpipe_library(<name> DEPS mpipe_a mpipe_b ...)`. A
file in lib/<name>/ may include "<name>/..." and "<dep>/..." for the mpipe libraries it names
directly (not ones it only reaches through another: what a library uses, it names). The
libraries' dependencies must not form a cycle. A program links libraries and sees all they
depend on: a test folder tests/<name>/ may include library <name> and everything below it, its
own files and tests/support/; any other folder with a CMakeLists.txt (tests/mpi, apps/bench)
the libraries that file links (mpipe_*) and everything below them.
Prints one line per violation (file:line: what) and exits 1 if there is any.
"""
import os
import re
import sys

INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]+"([^"]+)"', re.MULTILINE)
LIBRARY = re.compile(r"mpipe_library\(\s*(\w+)((?:\s+[^\s)]+)*)\s*\)")
MPIPE_TARGET = re.compile(r"\bmpipe_(\w+)")
SOURCE_SUFFIXES = (".h", ".cpp")


def read(path):
    with open(path, encoding="utf-8") as file:
        return file.read()


def read_libraries(lib_dir):
    """Returns {library: set of the mpipe libraries its DEPS name}, one per lib/ folder."""
    libraries = {}
    for folder in sorted(os.listdir(lib_dir)):
        cmake_file = os.path.join(lib_dir, folder, "CMakeLists.txt")
        if not os.path.isfile(cmake_file):
            continue
        match = LIBRARY.search(read(cmake_file))
        if not match or match.group(1) != folder:
            sys.exit(f"{cmake_file}: expected mpipe_library({folder} DEPS ...)")
        words = match.group(2).split()
        deps = words[1:] if words[:1] == ["DEPS"] else words
        libraries[folder] = {MPIPE_TARGET.match(dep).group(1) for dep in deps
                             if MPIPE_TARGET.match(dep)}
    return libraries


def find_cycle(libraries):
    """Returns one dependency cycle as a list of libraries, or None."""
    state = {}  # library -> "visiting" | "done"

    def visit(library, path):
        state[library] = "visiting"
        for dep in sorted(libraries.get(library, ())):
            if state.get(dep) == "visiting":
                return path[path.index(dep):] + [dep]
            if dep not in state:
                cycle = visit(dep, path + [dep])
                if cycle:
                    return cycle
        state[library] = "done"
        return None

    for library in sorted(libraries):
        if library not in state:
            cycle = visit(library, [library])
            if cycle:
                return cycle
    return None


def below(libraries, roots):
    """Returns `roots` and every library they depend on, directly or not."""
    reached, pending = set(), list(roots)
    while pending:
        library = pending.pop()
        if library not in reached:
            reached.add(library)
            pending += libraries.get(library, ())
    return reached


def source_files(folder):
    for root, _, names in os.walk(folder):
        for name in sorted(names):
            if name.endswith(SOURCE_SUFFIXES):
                yield os.path.join(root, name)


def check_folder(folder, allowed, libraries, local_ok, source_dir):
    """Yields "file:line: message" for each include in `folder` outside `allowed` libraries.

    An include whose first component is not a library is fine if `local_ok` and the file is
    found next to the includer or under tests/ (test helpers); in lib/ every include names its
    library.
    """
    for path in source_files(folder):
        text = read(path)
        for match in INCLUDE.finditer(text):
            included = match.group(1)
            line = text.count("\n", 0, match.start()) + 1
            where = f"{os.path.relpath(path, source_dir)}:{line}"
            library = included.split("/")[0] if "/" in included else None
            if library in libraries:
                if library not in allowed:
                    yield (f'{where}: includes "{included}", but {library} is not among the '
                           f"dependencies ({', '.join(sorted(allowed)) or 'none'})")
            elif not (local_ok and (
                    os.path.isfile(os.path.join(os.path.dirname(path), included))
                    or os.path.isfile(os.path.join(source_dir, "tests", included)))):
                yield f'{where}: includes "{included}", which is not "<library>/<header>"'


def main():
    source_dir = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                                 os.path.join(os.path.dirname(__file__), ".."))
    lib_dir = os.path.join(source_dir, "lib")
    libraries = read_libraries(lib_dir)
    violations = []

    for library, deps in sorted(libraries.items()):
        for dep in sorted(deps - libraries.keys()):
            violations.append(f"lib/{library}/CMakeLists.txt: mpipe_{dep} is not a library")
    cycle = find_cycle(libraries)
    if cycle:
        violations.append("lib: dependency cycle " + " -> ".join(cycle))

    for library, deps in sorted(libraries.items()):
        violations += check_folder(os.path.join(lib_dir, library), {library} | deps, libraries,
                                   False, source_dir)

    # Programs: a library's tests link that library; others what their CMakeLists.txt links.
    for parent in ("tests", "apps"):
        for folder in sorted(os.listdir(os.path.join(source_dir, parent))):
            path = os.path.join(source_dir, parent, folder)
            cmake_file = os.path.join(path, "CMakeLists.txt")
            if parent == "tests" and folder in libraries:
                linked = {folder}
            elif os.path.isfile(cmake_file):
                linked = set(MPIPE_TARGET.findall(read(cmake_file))) & libraries.keys()
            else:
                continue
            allowed = below(libraries, linked)
            violations += check_folder(path, allowed, libraries, True, source_dir)

    for violation in violations:
        print(violation)
    if violations:
        print(f"{len(violations)} layering violation(s): name the library in DEPS "
              "(lib/<name>/CMakeLists.txt), or move the code to where it belongs")
        return 1
    print(f"layering: {len(libraries)} libraries, includes within their dependencies, no cycle")
    return 0


if __name__ == "__main__":
    sys.exit(main())
