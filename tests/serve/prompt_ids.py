"""Token-id prompts for the serve tests: ids from a fixed linear-congruential stream, none
of them special (the special ids sit at the top of the vocabulary, the first three below)."""


def token_prompts(vocab, lengths, seed):
    """One prompt per entry of lengths, drawn one after another from the stream seeded
    with seed."""
    out, x = [], seed
    for n in lengths:
        p = []
        for _ in range(n):
            x = (x * 1103515245 + 12345) % (1 << 31)
            p.append(3 + (x >> 8) % (vocab - 6))
        out.append(p)
    return out
