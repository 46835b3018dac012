"""The `token` command: a development token minted offline, with the server's signing key."""

from __future__ import annotations

import argparse
import sys

from mock_server.cli.options import EXIT_BAD_FIXTURES, EXIT_USAGE, NO_KEY, NO_USER, config
from mock_server.core import errors
from mock_server.services.auth import Authenticator


def _dev_token(auth: Authenticator) -> str | None:
    """The default user's token, or None in a world without users."""
    try:
        return auth.dev_token()
    except errors.MockFailure:  # the only failure of minting: there is no user to name
        return None


def token(args: argparse.Namespace) -> int:
    if args.signing_key is None:
        print(f"platform-mock: {NO_KEY}", file=sys.stderr)
        return EXIT_USAGE
    # The world and its token authority only: minting needs no server, only its key.
    store = config(args).world()
    auth = Authenticator(store)
    if args.subject:
        try:
            subject = store.identity.subject_by_reference(args.subject)
        except ValueError as exc:
            print(f"platform-mock: {exc} in this world", file=sys.stderr)
            return EXIT_BAD_FIXTURES
        minted: str | None = auth.dev_token(subject)
    else:
        minted = auth.admin_token() if args.admin else _dev_token(auth)
    if minted is None:
        print(f"platform-mock: {NO_USER}", file=sys.stderr)
        return EXIT_BAD_FIXTURES
    print(minted)
    return 0
