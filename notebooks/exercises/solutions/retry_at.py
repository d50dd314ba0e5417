def retry_at(
    attempt: int,
    finished: float,
    max_attempts: int = 3,
    initial: float = 1.0,
    multiplier: float = 2.0,
    cap: float = 60.0,
) -> float | None:
    """When the next attempt is due after attempt ``attempt`` (1 = the first) failed at
    ``finished``, or None when it was the last one allowed."""
    if attempt >= max_attempts:
        return None  # max_attempts counts every attempt, the first included
    wait = initial
    for _ in range(attempt - 1):  # initial * multiplier ** (attempt - 1), capped as it grows
        if wait >= cap:
            break  # past the cap the wait stops growing: no float overflow
        wait *= multiplier
    return finished + min(wait, cap)
