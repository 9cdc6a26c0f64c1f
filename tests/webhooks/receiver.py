#!/usr/bin/env python3
"""A webhook receiver for the tests: HTTPS (or plain HTTP) on 127.0.0.1, one thread per connection.

Prints one JSON line per thing that happens ({"event": ...}); reads commands, one per line, on standard input:
  mode ok|fail|hang|huge   how to answer from now on: 200; 503; never (the connection stays open); 200 with a
                           64 MiB body written as fast as the client takes it
  down                     stop listening (connections are refused) and close open connections
  up                       listen again on the same port
Usage: receiver.py [--cert FILE --key FILE] [--port N]
"""
import argparse
import base64
import json
import socket
import ssl
import sys
import threading

lock = threading.Lock()
state = {"mode": "ok", "listener": None, "connections": set()}


def say(**fields):
    with lock:
        sys.stdout.write(json.dumps(fields, sort_keys=True) + "\n")
        sys.stdout.flush()


def read_request(conn):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return None
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, target, _ = lines[0].split(" ", 2)
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            return None
        body += chunk
    return method, target, headers, body[:length]


def serve(conn, context):
    try:
        if context is not None:
            conn = context.wrap_socket(conn, server_side=True)
        with lock:
            state["connections"].add(conn)
        request = read_request(conn)
        if request is None:
            return
        method, target, headers, body = request
        mode = state["mode"]
        fields = dict(method=method, target=target, headers=headers, body=body.decode("utf-8", "replace"),
                      body_base64=base64.b64encode(body).decode("ascii"), mode=mode)
        if mode == "ok":
            say(event="request", status=200, **fields)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
        elif mode == "fail":
            say(event="request", status=503, **fields)
            conn.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 12\r\nConnection: close\r\n\r\ncome back <b")
        elif mode == "hang":
            say(event="request", status=None, **fields)
            while conn.recv(65536):
                pass
            say(event="hang_ended", event_id=headers.get("remotesupport-event-id"))
        elif mode == "huge":
            say(event="request", status=200, **fields)
            total = 64 << 20
            sent = 0
            block = b"x" * 65536
            try:
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % total)
                while sent < total:
                    conn.sendall(block)
                    sent += len(block)
            except OSError:
                pass
            say(event="huge_sent", bytes=sent, event_id=headers.get("remotesupport-event-id"))
    except (OSError, ValueError, ssl.SSLError) as error:
        say(event="connection_error", error=str(error))
    finally:
        with lock:
            state["connections"].discard(conn)
        try:
            conn.close()
        except OSError:
            pass


def listen(port, context):
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(64)
    state["listener"] = listener

    def accept():
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(conn, context), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    return listener.getsockname()[1]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cert")
    parser.add_argument("--key")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    context = None
    if args.cert:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(args.cert, args.key)
    port = listen(args.port, context)
    say(event="listening", port=port)
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        if words[0] == "mode":
            state["mode"] = words[1]
            say(event="mode", mode=words[1])
        elif words[0] == "down":
            # shutdown() first: it wakes the thread blocked in accept() and stops listening at once (Linux).
            try:
                state["listener"].shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            state["listener"].close()
            with lock:
                for conn in list(state["connections"]):
                    try:
                        conn.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass
            say(event="down")
        elif words[0] == "up":
            listen(port, context)
            say(event="up")


if __name__ == "__main__":
    main()
