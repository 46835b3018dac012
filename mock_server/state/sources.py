"""The store's only sources of time, identifiers and randomness, all driven by one seed.

Nothing in the state layer calls `uuid4()`, `random` or `datetime.now()` directly: with the same
seed and the same request sequence, every id and timestamp comes out the same, byte for byte.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import product
from string import ascii_lowercase
from typing import Any

from faker import Faker

DEFAULT_EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
UNIQUE_ATTEMPTS = 1000  # draws for a value not given before, as Faker's `unique` makes


class Clock:
    """A virtual UTC clock: starts at a fixed instant and moves only when told to.

    The store advances it by one second per state change, so two changes never share a
    timestamp and a replayed request sequence reproduces the same timestamps.
    """

    def __init__(self, start: datetime = DEFAULT_EPOCH):
        self.start = start
        self._now = start

    def now(self) -> datetime:
        return self._now

    def advance(self, seconds: float = 1.0) -> datetime:
        self._now += timedelta(seconds=seconds)
        return self._now

    def set(self, moment: datetime) -> None:
        self._now = moment


# Every string of two and of three lower-case letters, in order: a number below 26**5 is
# the five letters `_THREE_LETTERS[n // 676] + _TWO_LETTERS[n % 676]`.
_TWO_LETTERS = ["".join(pair) for pair in product(ascii_lowercase, repeat=2)]
_THREE_LETTERS = ["".join(triple) for triple in product(ascii_lowercase, repeat=3)]


MAX_SEED = 2**53 - 1  # the largest integer every JSON client reads exactly


def seed_problem(seed: object) -> str | None:
    """Why a value is not a seed, if it is not: the one rule of the command line, the
    pytest plugin and the admin API. A seed is a whole number from 0 to 2^53 - 1."""
    if not isinstance(seed, int) or isinstance(seed, bool):
        return f"a seed is a whole number, not {seed!r}"
    if not 0 <= seed <= MAX_SEED:
        return f"a seed is a whole number from 0 to 2^53 - 1 ({MAX_SEED}), not {seed}"
    return None


@dataclass(frozen=True)
class SourcesState:
    """Where a store's sources stood: its clock, and how far each generator had got."""

    seed: int
    start: datetime
    now: datetime
    random: Any
    token_random: Any
    faker_random: Any
    unique_seen: dict[str, frozenset[str]]
    words: frozenset[str]


class Sources:
    """Seeded id source, Faker and random generator of one store."""

    def __init__(
        self,
        seed: int,
        epoch: datetime = DEFAULT_EPOCH,
        faker: Faker | None = None,
        generation: int = 0,
    ):
        self.seed = seed
        self.clock = Clock(epoch)
        self.random = random.Random(seed)
        # Token ids come from a stream of their own, one per world the store builds: a
        # fresh app's first world is the same for one seed, and a later world never hands
        # out a token id (so a token) of an earlier one. Other ids do not depend on it.
        self.token_random = random.Random(f"{seed}:{generation}")
        # Building a Faker takes most of a reset; one reseeded and cleared gives the same data.
        self.faker = faker or Faker("en_US")
        self.faker.seed_instance(seed)
        # The values `unique` has given, by kind: Faker's own `unique` keeps its record in a
        # private attribute, which a snapshot would have to reach into.
        self.unique_seen: dict[str, set[str]] = {}
        # The words `word` has given: those of a snapshot, shared, and those given since.
        self._words_before: frozenset[str] = frozenset()
        self.words: set[str] = set()
        self._faker_random = self.faker.random  # the proxy's lookup costs more than a draw

    def word(self) -> str:
        """Five seeded lower-case letters, never the same twice in one world (as Faker's
        `unique.lexify` would give, at a tenth of its cost: a job has up to 100,000 runs)."""
        while True:
            number = self._faker_random.randrange(26**5)
            word: str = _THREE_LETTERS[number // 676] + _TWO_LETTERS[number % 676]
            if word not in self.words and word not in self._words_before:
                self.words.add(word)
                return word

    def snapshot(self) -> SourcesState:
        """Where every source stands now, to come back to with `restored`."""
        return SourcesState(
            seed=self.seed,
            start=self.clock.start,
            now=self.clock.now(),
            random=self.random.getstate(),
            token_random=self.token_random.getstate(),
            faker_random=self._faker_random.getstate(),
            unique_seen={kind: frozenset(seen) for kind, seen in self.unique_seen.items()},
            words=self._words_before | self.words,
        )

    @classmethod
    def restored(cls, state: SourcesState, faker: Faker, generation: int | None = None) -> Sources:
        """Sources where a snapshot left them; for a new world, `generation`, with that
        world's own token-id stream (a token id of an earlier world never comes back)."""
        sources = cls.__new__(cls)
        sources.seed = state.seed
        sources.clock = Clock(state.start)
        sources.clock.set(state.now)
        sources.random = random.Random()
        sources.random.setstate(state.random)
        if generation is None:
            sources.token_random = random.Random()
            sources.token_random.setstate(state.token_random)
        else:
            sources.token_random = random.Random(f"{state.seed}:{generation}")
        sources.faker = faker
        sources._faker_random = faker.random
        sources._faker_random.setstate(state.faker_random)
        sources.unique_seen = {kind: set(seen) for kind, seen in state.unique_seen.items()}
        sources._words_before = state.words
        sources.words = set()
        return sources

    def unique(self, kind: str, draw: Callable[[], str]) -> str:
        """A value of `draw` (a Faker provider) never given before in this world for `kind`:
        drawn again while taken, as Faker's `unique` proxy draws (so the same values)."""
        seen = self.unique_seen.setdefault(kind, set())
        for _ in range(UNIQUE_ATTEMPTS):
            value = draw()
            if value not in seen:
                seen.add(value)
                return value
        raise ValueError(f"no new {kind} after {UNIQUE_ATTEMPTS:,} draws")

    def new_id(self, prefix: str) -> str:
        """A fresh id like `job-run-3f2a9c1b7d4e6f80`: prefix, then 16 seeded hex digits."""
        return f"{prefix}-{self.random.getrandbits(64):016x}"

    def new_uuid(self) -> str:
        """A fresh seeded UUID (version 4 in form), for ids the platform's clients read as
        UUIDs (artifact versions)."""
        return str(uuid.UUID(int=self.random.getrandbits(128), version=4))

    def new_token_id(self, prefix: str) -> str:
        """A fresh personal-access-token id, from the world's own token-id stream."""
        return f"{prefix}-{self.token_random.getrandbits(64):016x}"

    def hex(self, digits: int) -> str:
        """Seeded hex digits, for ids in other formats (e.g. OpenAI's `resp_...`)."""
        return f"{self.random.getrandbits(digits * 4):0{digits}x}"


def iso(moment: datetime) -> str:
    """ISO 8601 in UTC with a trailing `Z`, as the contract requires for timestamps."""
    return (
        moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
    )


UNIX_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MILLISECOND = timedelta(milliseconds=1)


def epoch_ms(moment: datetime) -> int:
    """Milliseconds since the Unix epoch, the unit of job-run times (exact, no float)."""
    return (moment - UNIX_EPOCH) // _MILLISECOND


def from_epoch_ms(ms: int) -> datetime:
    return UNIX_EPOCH + timedelta(milliseconds=ms)


def parse_iso(text: str) -> datetime:
    """An ISO 8601 timestamp as an aware UTC datetime (naive ones are taken as UTC)."""
    moment = datetime.fromisoformat(text)
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


# The world's clock stays where time arithmetic has room (a token made at the last instant
# of year 9999 would expire past what a datetime can hold) and after the Unix epoch (job-run
# times are milliseconds since it).
CLOCK_RANGE = (datetime(1970, 1, 1, tzinfo=UTC), datetime(9000, 1, 1, tzinfo=UTC))


def world_time(text: str) -> datetime:
    """A time of the world given by a fixture (a record's, or its clock), in the range the
    clock may show."""
    instant = parse_iso(text)
    if not CLOCK_RANGE[0] <= instant < CLOCK_RANGE[1]:
        raise ValueError(f"{text}: times must be from 1970 up to (not including) 9000")
    return instant
