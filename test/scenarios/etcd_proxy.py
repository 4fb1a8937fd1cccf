#!/usr/bin/env python3
"""A TCP proxy between the agents and etcd that stops forwarding on request, as a network that
cuts every node off from etcd would: while the file CUT exists, no byte goes either way (bytes
are held, connections stay open, new ones are accepted but not passed on).

    etcd_proxy.py TARGET_PORT CUT [LOG [CUT_AFTER]]
                                    prints the port it listens on (127.0.0.1), then serves

With LOG, it appends "accepted N" to LOG as it accepts its N-th connection (once that connection
is held, if CUT exists then), so that a test can wait until a client's request is being held. With
CUT_AFTER, it creates CUT itself as it accepts connection CUT_AFTER + 1: the first CUT_AFTER
connections are passed on, every later one is held.
"""
import os
import socket
import sys
import threading
import time

target, cut = int(sys.argv[1]), sys.argv[2]
log = sys.argv[3] if len(sys.argv) > 3 else None
cut_after = int(sys.argv[4]) if len(sys.argv) > 4 else None


def hold():
    while os.path.exists(cut):
        time.sleep(0.02)


def pump(src, dst):
    try:
        while data := src.recv(65536):
            hold()
            dst.sendall(data)
    except OSError:
        pass
    for s in (src, dst):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def serve(client):
    hold()
    try:
        upstream = socket.create_connection(("127.0.0.1", target))
    except OSError:
        client.close()
        return
    for a, b in ((client, upstream), (upstream, client)):
        threading.Thread(target=pump, args=(a, b), daemon=True).start()


listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", 0))
listener.listen(256)
print(listener.getsockname()[1], flush=True)
accepted = 0
while True:
    conn, _ = listener.accept()
    accepted += 1
    if cut_after is not None and accepted > cut_after:
        open(cut, "a").close()
    if log:
        with open(log, "a") as f:
            f.write(f"accepted {accepted}\n")
    threading.Thread(target=serve, args=(conn,), daemon=True).start()
