"""The `platform-mock` command's entry, and `python -m mock_server`: `--version` is answered
before anything else is imported (the command's start is held to a few times the
interpreter's own, and the command line's modules cost more than the interpreter itself);
every other command is `mock_server.cli`'s."""

import sys


def main() -> int:
    if sys.argv[1:] == ["--version"]:
        from mock_server.core.version import __version__

        print(f"platform-mock {__version__}")
        return 0
    from mock_server.cli import main as command

    return command()


if __name__ == "__main__":
    sys.exit(main())
