/* compass: CompassService's method descriptors shared between its files. */
#ifndef AGENTHUB_COMPASS_H
#define AGENTHUB_COMPASS_H

#include "grpc/grpc.h"

extern const struct grpc_method compass_subscribe_agent_session_method;
extern const struct grpc_method compass_subscribe_events_method;

#endif
