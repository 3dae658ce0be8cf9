"""Seeded sources of ids, tokens, delivered codes and draws among weighted scenarios:
with `--seed` and the manual clock the same requests give byte-identical answers
(README, "Configuration").

Each kind of value has its own stream derived from the seed, so that, say, a token
exchange never shifts the ids of later orders. A stream is a chain of `random.Random`s,
one per `BLOCK` draws, each seeded by the stream's name and its place in the chain (the
first by the name alone, as every stream was before it was chained). A saved state
resumes a stream at any position by seeding its block and drawing at most a block's worth
again (`skip`): restoring costs the same for a count of ten as for 2**53
(docs/hosting.md, "What one request may cost"), where replaying every draw cost seconds.

A created sandbox's credentials (tokens, generated API keys and webhook secrets) are
keyed as well: each is an HMAC, under a secret of the server that no tenant sees, of its
seeded draw and the sandbox's id (docs/hosting.md, "What a tenant can see"). Anyone may
know a seed, since a tenant chooses its own; without the server's secret nobody can
compute another sandbox's credentials from it, nor move one to another sandbox.
"""

from __future__ import annotations

import hashlib
import hmac
import random
import secrets

from .sandbox_ids import DEFAULT_ID

#: Seeds are 63-bit: any JSON client can send and read them back exactly.
MAX_SEED = 2**63 - 1
#: What an account configured without a webhook secret signs with in the default
#: sandbox (a created sandbox draws its own instead: `fallback_webhook_secret`).
DEFAULT_WEBHOOK_SECRET = "whsec_test_default"
_CODE_LETTERS = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I: codes get typed by hand


#: Draws per block of a stream: restoring a position replays at most this many draws of
#: each stream (about 3 ms for all four), and a block is seeded every this many draws.
BLOCK = 2**14
#: The largest count a state document may give (docs/state.md): exact in any JSON client.
MAX_DRAWN = 2**53 - 1


class _Stream:
    """One stream of draws, and how many have been drawn from it."""

    __slots__ = ("_name", "_random", "drawn")

    def __init__(self, name: str) -> None:
        self._name = name
        self._random = random.Random(name)
        self.drawn = 0

    def draw(self, bits: int) -> int:
        return self._next().getrandbits(bits)

    def fraction(self) -> float:
        """A float in [0, 1), as `random.random()` draws it."""
        return self._next().random()

    def _next(self) -> random.Random:
        """The generator of the next draw, counted (a block's first draw seeds it)."""
        drawn = self.drawn
        if drawn and not drawn % BLOCK:
            self._random = self._block(drawn // BLOCK)
        self.drawn = drawn + 1
        return self._random

    def seek(self, drawn: int, bits: int | None) -> None:
        """Continue after `drawn` draws of `bits` each (None: `fraction`s), as if they had
        been drawn: the block seeded, then the draws before it in the block made again."""
        block, offset = divmod(drawn, BLOCK)
        generator = self._block(block)
        if bits is None:
            for _ in range(offset):
                generator.random()
        else:
            for _ in range(offset):
                generator.getrandbits(bits)
        self._random = generator
        self.drawn = drawn

    def _block(self, block: int) -> random.Random:
        return random.Random(f"{self._name}:{block}" if block else self._name)


#: How wide one draw of each stream is (`uuid`, `_secret`, `codes`).
_ID_BITS, _TOKEN_BITS, _CODE_BITS = 128, 256, 75
#: A UUID's version (4) and variant (RFC 4122) bits, set over the drawn ones.
_UUID_KEPT = ~((0xF000 << 64) | (0xC000 << 48))
_UUID_SET = (4 << 76) | (0x8000 << 48)


class Randomness:
    """A created sandbox's id (`sandbox_id`) goes into every token
    and generated API key, so that sandboxes with the same seed never hand out the same
    credential: tokens and generated keys are unique server-wide, which the root paths'
    routing by credential relies on (docs/control-api.md, "Sandboxes").

    `key` (a created sandbox's: the server's secret) keys every credential drawn; the
    default sandbox has none, so its credentials follow the seed alone."""

    def __init__(self, seed: int, sandbox_id: str = DEFAULT_ID, key: bytes | None = None) -> None:
        self.seed = seed
        #: What tokens and generated keys carry: the id, none for the default sandbox.
        self._tag = "" if sandbox_id == DEFAULT_ID else sandbox_id
        self._key = key
        self._ids = _Stream(f"{seed}:ids")
        self._tokens = _Stream(f"{seed}:tokens")
        self._codes = _Stream(f"{seed}:codes")
        #: The draws among weighted scenarios (docs/scenarios.md, "Weighted selection"):
        #: a stream of their own, so a draw never shifts an id, a token or a code.
        self._weights = _Stream(f"{seed}:weights")
        self._next_weight: float | None = None  # drawn, not yet used up (`next_weight_draw`)

    @property
    def drawn(self) -> dict[str, int]:
        """How far each stream has been drawn: a saved state resumes the same sequence
        from these counts (`skip`), rather than storing the generators. A weight drawn
        but not yet used up is not counted: it is drawn again after a restore."""
        pending = 0 if self._next_weight is None else 1
        return {
            "ids": self._ids.drawn,
            "tokens": self._tokens.drawn,
            "codes": self._codes.drawn,
            "weights": self._weights.drawn - pending,
        }

    def skip(self, ids: int, tokens: int, codes: int, weights: int = 0) -> None:
        """Continue the sequence an earlier run drew this far (each count at most
        `MAX_DRAWN`), at a cost that does not grow with the counts."""
        self._ids.seek(ids, _ID_BITS)
        self._tokens.seek(tokens, _TOKEN_BITS)
        self._codes.seek(codes, _CODE_BITS)
        self._weights.seek(weights, None)
        self._next_weight = None

    def uuid(self) -> str:
        """A version-4 UUID string from the seeded stream (formatted by hand: building a
        `uuid.UUID` only to print it cost more than the rest of making an id)."""
        bits = self._ids.draw(_ID_BITS) & _UUID_KEPT | _UUID_SET
        h = bits.to_bytes(16).hex()  # faster than f"{bits:032x}" (bench/FINDINGS.md section 19)
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"

    def token(self) -> str:
        """A bearer token: `<sandbox id>.<64 hex>` in a sandbox, bare hex in the default."""
        secret = self._secret()
        return f"{self._tag}.{secret}" if self._tag else secret

    def api_key(self) -> str:
        secret = self._secret()[:24]
        return f"ak_{self._tag}_{secret}" if self._tag else f"ak_{secret}"

    def webhook_secret(self) -> str:
        return f"whsec_{self._secret()[:32]}"

    def fallback_webhook_secret(self) -> str:
        """The secret of an account configured without one: the documented default in
        the default sandbox; a created sandbox's own, so that no two tenants share one."""
        return DEFAULT_WEBHOOK_SECRET if self._key is None else self.webhook_secret()

    def _secret(self) -> str:
        drawn = f"{self._tokens.draw(_TOKEN_BITS):064x}"
        if self._key is None:
            return drawn
        message = f"{self._tag}.{drawn}".encode()
        return hmac.new(self._key, message, hashlib.sha256).hexdigest()

    def codes(self, count: int) -> list[str]:
        """Key codes `XXXXX-XXXXX-XXXXX`: 15 letters of 32, five bits each, from one
        75-bit draw per code (uniform, and cheap to replay for a saved state)."""
        draw = self._codes.draw
        return [_code(draw(_CODE_BITS)) for _ in range(count)]

    def next_weight_draw(self) -> float:
        """The next draw among weighted scenarios: a float in [0, 1) that
        `selection.Draw.pick` scales by the candidates' weights. It is used up only by
        `weight_drawn` (the order was made): until then the same value comes back, so a
        refused order changes nothing of the sequence."""
        if self._next_weight is None:
            self._next_weight = self._weights.fraction()
        return self._next_weight

    def weight_drawn(self) -> None:
        """The draw `next_weight_draw` gave decided an order: count it, move on."""
        self.next_weight_draw()  # drawn, in case it was not looked at
        self._next_weight = None


def _code(bits: int) -> str:
    letters = "".join(_CODE_LETTERS[(bits >> shift) & 31] for shift in range(0, 75, 5))
    return f"{letters[:5]}-{letters[5:10]}-{letters[10:]}"


def fresh_seed() -> int:
    """A seed for runs that did not ask for one (shown in the banner, for replay)."""
    return random.SystemRandom().randrange(1, 2**31)


def own_seed() -> int:
    """A created sandbox's seed when its body gives none: from the operating system's
    random source, never the server's seed (docs/hosting.md, "What a tenant can see")."""
    return secrets.randbelow(MAX_SEED) + 1


def server_secret() -> bytes:
    """The secret that keys created sandboxes' credentials: made once per server (kept
    in the `--state` file when there is one), never shown."""
    return secrets.token_bytes(32)
