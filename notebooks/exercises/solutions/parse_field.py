def parse_field(text, low, high):
    """The values a numeric cron field allows: *, n, a-b, */s, a-b/s, n/s and lists."""

    def number(part):
        if not part.isdigit():
            raise ValueError(f"{part!r} is not a number")
        value = int(part)
        if not low <= value <= high:
            raise ValueError(f"{value} is out of range {low}-{high}")
        return value

    values = set()
    for item in text.split(","):
        if not item:
            raise ValueError(f"empty list item in {text!r}")
        base, slash, step_text = item.partition("/")
        step = 1
        if slash:
            if not step_text.isdigit() or int(step_text) == 0:
                raise ValueError(f"step must be a number >= 1 in {item!r}")
            step = int(step_text)
        if base == "*":
            start, stop = low, high
        elif "-" in base:
            first, _, last = base.partition("-")
            start, stop = number(first), number(last)
            if start > stop:
                raise ValueError(f"reversed range {base!r}")
        else:
            start = number(base)
            stop = high if slash else start  # n/s means n-MAX/s
        values.update(range(start, stop + 1, step))
    return values
