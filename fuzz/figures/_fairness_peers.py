"""The child process of ``fairness.py``: flooding peers and one good client, against a server.

Usage: ``python fuzz/figures/_fairness_peers.py PORT FLOODS SECONDS``

For ``SECONDS``: ``FLOODS`` connections to 127.0.0.1:``PORT`` each send 64 KiB
of empty frames (65,536 zero bytes) every 0.5 s, while after 0.5 s one good
client sends a 21-byte frame and waits for its echo, every 5 ms. Prints the
good client's round trips, in seconds, as one JSON list. Standard library
only: the peers are not what is measured.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time


def main(port: int, floods: int, seconds: float) -> None:
    stop = time.monotonic() + seconds
    burst = bytes(64 * 1024)  # 65,536 empty frames

    def flood() -> None:
        with socket.create_connection(("127.0.0.1", port)) as sock:
            while time.monotonic() < stop:
                sock.sendall(burst)
                time.sleep(0.5)

    threads = [threading.Thread(target=flood, daemon=True) for _ in range(floods)]
    for thread in threads:
        thread.start()
    time.sleep(0.5)
    request = bytes([20]) + bytes(range(20))
    rtts = []
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        while time.monotonic() < stop:
            started = time.perf_counter()
            sock.sendall(request)
            reply = b""
            while len(reply) < len(request):
                reply += sock.recv(len(request) - len(reply))
            rtts.append(time.perf_counter() - started)
            time.sleep(0.005)
    for thread in threads:
        thread.join()
    print(json.dumps(rtts))


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]))
