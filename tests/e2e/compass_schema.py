"""Message classes built by hand from compass.v1's published names and
numbers, for the suites that play a peer written against compass's schema
(never from proto/, never from compass's own files).

FACTS maps a message name to its fields, each a tuple
(name, number, type[, type name or None[, oneof or None[, repeated]]]);
a missing type is a string.  ENUMS maps an enum name to its value names in
number order (values are prefixed as protoc would: AgentSessionState's
READY is AGENT_SESSION_STATE_READY)."""
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

FD = descriptor_pb2.FieldDescriptorProto


def messages(file_name, facts, enums=None):
    """A class holder with one message class per FACTS entry (attributes
    by message name) and the private pool they live in (.pool)."""
    fdp = descriptor_pb2.FileDescriptorProto(name=file_name, package="compass.v1",
                                             syntax="proto3")
    for name, values in (enums or {}).items():
        prefix = "".join("_" + c if c.isupper() else c.upper() for c in name).lstrip("_")
        enum = fdp.enum_type.add(name=name)
        for number, value in enumerate(values):
            enum.value.add(name=prefix + "_" + value, number=number)
    for name, fields in facts.items():
        message = fdp.message_type.add(name=name)
        oneofs = []
        for spec in fields:
            fname, number = spec[:2]
            ftype = spec[2] if len(spec) > 2 else FD.TYPE_STRING
            type_name = spec[3] if len(spec) > 3 else None
            oneof = spec[4] if len(spec) > 4 else None
            repeated = len(spec) > 5 and spec[5]
            field = message.field.add(name=fname, number=number, type=ftype,
                                      label=FD.LABEL_REPEATED if repeated else
                                      FD.LABEL_OPTIONAL)
            if type_name:
                field.type_name = ".compass.v1." + type_name
            if oneof:
                if oneof not in oneofs:
                    oneofs.append(oneof)
                    message.oneof_decl.add(name=oneof)
                field.oneof_index = oneofs.index(oneof)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    factory = message_factory.MessageFactory(pool)
    classes = {name: factory.GetPrototype(pool.FindMessageTypeByName("compass.v1." + name))
               for name in facts}
    return type("C", (), dict(classes, pool=pool))
