"""compass.v1's public door as its published schema numbers it, written
down by hand (names, numbers, types): the suites that talk to agenthub as
a compass UI build their message classes from this table alone
(compass_schema.messages), never from agenthub's own protos."""
from google.protobuf import descriptor_pb2

FD = descriptor_pb2.FieldDescriptorProto
STRING, BOOL, UINT64, INT64, UINT32 = (FD.TYPE_STRING, FD.TYPE_BOOL, FD.TYPE_UINT64,
                                       FD.TYPE_INT64, FD.TYPE_UINT32)
MESSAGE, ENUM = FD.TYPE_MESSAGE, FD.TYPE_ENUM
# The first number agenthub may use for a field of its own on a compass message.
OWN = 100

# compass.v1's public door, from its published schema: (name, number, type,
# type name or None, oneof or None, repeated).  Issue (16) is reduced to its
# id: agenthub never sends one, and the walk only needs its number.
FACTS = {
    "GetServerInfoRequest": [],
    "GetServerInfoResponse": [("version", 1, STRING), ("api_version", 2, STRING)],
    "ServerStatus": [("state", 1, ENUM, "ServerState")],
    "ResyncRequired": [],
    "AgentSessionStatus": [("session_id", 1, STRING), ("state", 2, ENUM, "AgentSessionState"),
                           ("agent_account_id", 3, STRING)],
    "AgentMessageChunk": [("session_id", 1, STRING), ("text", 2, STRING),
                          ("is_thought", 3, BOOL)],
    "AgentToolCall": [("session_id", 1, STRING), ("tool_call_id", 2, STRING),
                      ("title", 3, STRING), ("status", 4, ENUM, "AgentToolCallStatus")],
    "AgentPlanEntry": [("content", 1, STRING), ("status", 2, ENUM, "AgentPlanEntryStatus")],
    "AgentPlan": [("session_id", 1, STRING),
                  ("entries", 2, MESSAGE, "AgentPlanEntry", None, True)],
    "Issue": [("id", 1, STRING)],
    "SubscribeEventsRequest": [("since_seq", 1, UINT64), ("instance_epoch", 2, UINT64)],
    "SubscribeEventsResponse": [
        ("seq", 1, UINT64), ("at_unix_ms", 2, INT64), ("instance_epoch", 3, UINT64),
        ("snapshot_seq", 4, UINT64),
        ("server_status", 10, MESSAGE, "ServerStatus", "payload"),
        ("resync_required", 11, MESSAGE, "ResyncRequired", "payload"),
        ("agent_session_status", 12, MESSAGE, "AgentSessionStatus", "payload"),
        ("agent_message_chunk", 13, MESSAGE, "AgentMessageChunk", "payload"),
        ("agent_tool_call", 14, MESSAGE, "AgentToolCall", "payload"),
        ("agent_plan", 15, MESSAGE, "AgentPlan", "payload"),
        ("issue", 16, MESSAGE, "Issue", "payload")],
    "SessionAssistantText": [("text", 1, STRING), ("message_id", 2, STRING)],
    "SessionThinking": [("text", 1, STRING), ("message_id", 2, STRING)],
    "SessionToolCall": [("tool_call_id", 1, STRING), ("title", 2, STRING),
                        ("status", 3, ENUM, "AgentToolCallStatus")],
    "SessionFileDiff": [("path", 1, STRING), ("old_text", 2, STRING), ("new_text", 3, STRING)],
    "SessionToolCallUpdate": [("tool_call_id", 1, STRING),
                              ("status", 2, ENUM, "AgentToolCallStatus"), ("output", 3, STRING),
                              ("diffs", 4, MESSAGE, "SessionFileDiff", None, True)],
    "SessionPlan": [("entries", 1, MESSAGE, "AgentPlanEntry", None, True)],
    "SessionNotice": [("text", 1, STRING), ("link", 2, STRING)],
    "SessionEvent": [("event_id", 1, STRING), ("at_unix_ms", 2, INT64),
                     ("assistant_text", 3, MESSAGE, "SessionAssistantText", "event"),
                     ("thinking", 4, MESSAGE, "SessionThinking", "event"),
                     ("tool_call", 5, MESSAGE, "SessionToolCall", "event"),
                     ("tool_call_update", 6, MESSAGE, "SessionToolCallUpdate", "event"),
                     ("plan", 7, MESSAGE, "SessionPlan", "event"),
                     ("notice", 8, MESSAGE, "SessionNotice", "event")],
    "SubscribeAgentSessionRequest": [("session_id", 1, STRING)],
    "AgentSessionFrame": [("session_id", 1, STRING), ("event", 2, MESSAGE, "SessionEvent"),
                          ("state", 3, ENUM, "AgentSessionState")],
    "StopAgentSessionRequest": [("session_id", 1, STRING)],
    "StopAgentSessionResponse": [],
    "GetAgentStatusRequest": [("session_id", 1, STRING)],
    "GetAgentStatusResponse": [("statuses", 1, MESSAGE, "AgentSessionStatus", None, True)],
}
ENUMS = {
    "ServerState": ["UNSPECIFIED", "READY"],
    "AgentSessionState": ["UNSPECIFIED", "STARTING", "READY", "WORKING", "STOPPED", "ERRORED",
                          "DISCONNECTED"],
    "AgentToolCallStatus": ["UNSPECIFIED", "PENDING", "IN_PROGRESS", "COMPLETED", "FAILED"],
    "AgentPlanEntryStatus": ["UNSPECIFIED", "PENDING", "IN_PROGRESS", "COMPLETED"],
}
