#!/usr/bin/python3
"""tail_session.py: a small SubscribeAgentSession tail printer (python3-grpcio).

`make demo` uses it while `agenthub log --follow` is not built yet.  One line
per frame, like `agenthub log`: time, seq, type and a one-line summary.

  tail_session.py --addr HOST:PORT --token TOKEN [--seconds N] SESSION
  tail_session.py --addr HOST:PORT --token TOKEN --no-follow \
                  [--send-after S] --send TEXT [--send TEXT]... SESSION

--send calls SendAgentMessage for each TEXT (after --send-after seconds);
--no-follow only sends.

Generates the compass.v1 messages with protoc into a temp dir.  Exits 0 when
the stream ends cleanly or after --seconds; 1 on an error status.
"""

import argparse
import importlib
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def load_messages():
    out = Path(tempfile.mkdtemp(prefix="agenthub-tail-pb-"))
    try:
        subprocess.run(["protoc", "-I", str(ROOT / "proto"), "--python_out", str(out),
                        "compass/v1/frames.proto", "compass/v1/services.proto"], check=True)
        sys.path.insert(0, str(out))
        frames = importlib.import_module("compass.v1.frames_pb2")
        services = importlib.import_module("compass.v1.services_pb2")
        return frames, services
    finally:
        sys.path.pop(0)
        shutil.rmtree(out, ignore_errors=True)


def short(text, n=72):
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[:n - 3] + "..."


def describe(frames, frame):
    """(type, summary) of an AgentSessionFrame."""
    state_name = frames.AgentSessionState.Name
    if frame.HasField("event"):
        ev = frame.event
        kind = ev.WhichOneof("event") or "unknown"
        tool_status = frames.AgentToolCallStatus.Name
        if kind == "assistant_text":
            return kind, short(ev.assistant_text.text)
        if kind == "thinking":
            return kind, short(ev.thinking.text)
        if kind == "tool_call":
            return kind, "%s %s [%s]" % (ev.tool_call.tool_call_id, short(ev.tool_call.title, 48),
                                         tool_status(ev.tool_call.status).split("_STATUS_")[-1])
        if kind == "tool_call_update":
            u = ev.tool_call_update
            return kind, "%s [%s] %s" % (u.tool_call_id, tool_status(u.status).split("_STATUS_")[-1],
                                         short(u.output, 48))
        if kind == "plan":
            marks = {0: " ", 1: " ", 2: ">", 3: "x"}
            return kind, " ".join("[%s] %s" % (marks.get(e.status, " "), short(e.content, 30))
                                  for e in ev.plan.entries)
        if kind == "notice":
            return kind, short(ev.notice.text)
        if kind == "batch_pending":
            b = ev.batch_pending
            return kind, "count=%d fires_at=%d" % (b.count, b.fires_at_unix_ms)
        if kind == "record":
            return ev.record.type, short(ev.record.data_json)
        return kind, ""
    return "state", state_name(frame.state).replace("AGENT_SESSION_STATE_", "").lower()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--addr", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--seconds", type=float, default=0)
    parser.add_argument("--send", action="append", default=[])
    parser.add_argument("--send-after", type=float, default=0)
    parser.add_argument("--no-follow", action="store_true")
    parser.add_argument("session")
    args = parser.parse_args()

    import grpc
    frames, services = load_messages()
    channel = grpc.insecure_channel(args.addr)
    metadata = [("authorization", "Bearer " + args.token)]
    if args.send:
        send = channel.unary_unary("/compass.v1.CompassService/SendAgentMessage",
                                   request_serializer=services.SendAgentMessageRequest.SerializeToString,
                                   response_deserializer=services.SendAgentMessageResponse.FromString)

        def send_all():
            time.sleep(args.send_after)
            for text in args.send:
                try:
                    send(services.SendAgentMessageRequest(session_id=args.session, text=text),
                         metadata=metadata, timeout=10)
                except grpc.RpcError as e:
                    print("tail_session: SendAgentMessage: %s %s" % (e.code().name, e.details()),
                          file=sys.stderr)
                    return 1
            return 0

        if args.no_follow:
            return send_all()
        threading.Thread(target=send_all, daemon=True).start()
    if args.no_follow:
        return 0
    call = channel.unary_stream("/compass.v1.CompassService/SubscribeAgentSession",
                                request_serializer=services.SubscribeAgentSessionRequest.SerializeToString,
                                response_deserializer=frames.AgentSessionFrame.FromString)
    # agenthub_events: records and batch windows too (agenthub's own events).
    stream = call(services.SubscribeAgentSessionRequest(session_id=args.session,
                                                        agenthub_events=True),
                  metadata=metadata)
    if args.seconds > 0:
        timer = threading.Timer(args.seconds, stream.cancel)
        timer.daemon = True
        timer.start()
    try:
        for frame in stream:
            kind, summary = describe(frames, frame)
            stamp = time.strftime("%H:%M:%S", time.localtime(frame.at_unix_ms / 1000))
            print("%s.%03d %5d %-16s %s" % (stamp, frame.at_unix_ms % 1000, frame.seq, kind, summary),
                  flush=True)
    except grpc.RpcError as e:
        if e.code() == grpc.StatusCode.CANCELLED:
            return 0
        print("tail_session: %s %s" % (e.code().name, e.details()), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
