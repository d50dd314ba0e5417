def parse_field(text: str, low: int, high: int) -> set[int]:
    """The values a numeric cron field allows: *, n, a-b, */s, a-b/s, n/s and lists."""

    def number(part: str) -> int:
        if not (part.isascii() and part.isdigit()):  # int() alone would take "+5" and " 5"
            raise ValueError(f"{part!r} is not a number")
        value = int(part)
        if not low <= value <= high:
            raise ValueError(f"{value} is out of range {low}-{high}")
        return value

    values: set[int] = set()
    for item in text.split(","):
        if not item:
            raise ValueError(f"empty list item in {text!r}")
        base, slash, step_text = item.partition("/")
        step = 1
        if slash:
            if not (step_text.isascii() and step_text.isdigit()) or int(step_text) == 0:
                raise ValueError(f"step must be a number >= 1 in {item!r}")
            step = int(step_text)
        if base == "*":
            start, stop = low, high
        elif "-" in base:
            first, _, last = base.partition("-")
            start, stop = number(first), number(last)  # both ends bounds-checked
            if start > stop:
                raise ValueError(f"reversed range {base!r}")
        else:
            start = number(base)
            stop = high if slash else start  # n/s means n-high/s
        values.update(range(start, stop + 1, step))
    return values
