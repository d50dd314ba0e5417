import heapq


def pop_due(heap, now, generations):
    """Pop and return the live entries due at or before ``now``, in heap order."""
    due = []
    while heap and heap[0][0] <= now:
        entry = heapq.heappop(heap)
        name, generation = entry[4], entry[3]
        if generations[name] == generation:  # otherwise a tombstone: drop it
            due.append(entry)
    return due
