#!/usr/bin/env python3
"""A TCP proxy between the agents and etcd that stops forwarding on request, as a network that
cuts every node off from etcd would: while the file CUT exists, no byte goes either way (bytes
are held, connections stay open, new ones are accepted but not passed on).

    etcd_proxy.py TARGET_PORT CUT   prints the port it listens on (127.0.0.1), then serves
"""
import os
import socket
import sys
import threading
import time

target, cut = int(sys.argv[1]), sys.argv[2]


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
while True:
    conn, _ = listener.accept()
    threading.Thread(target=serve, args=(conn,), daemon=True).start()
