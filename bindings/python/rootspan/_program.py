"""The `rootspan` console command of a pip-installed package.

The wheel ships the program itself as rootspan/bin/rootspan (it finds
rootspan/librootspan.so through its RUNPATH); this entry point only replaces
the Python process with it, so that its exit status, signals and terminal
are the program's own.
"""
import os
import sys


def program_path():
    """The bundled `rootspan` program, or None in a source tree or a system install."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "rootspan")
    return path if os.access(path, os.X_OK) else None


def main():
    path = program_path()
    if path is None:
        sys.stderr.write("rootspan: this Python package has no bundled program (bin/rootspan); it was not installed "
                         "from a wheel. Run the program of your system install instead.\n")
        return 127
    os.execv(path, [path] + sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
