/* outcome.h: the one table from a state-machine outcome to its S3 error code
 * and HTTP status (docs/ARCHITECTURE.md, "HTTP routes as built"), shared
 * by the query service, the gateway and the producer library so that
 * every edge names an outcome the same way. */
#ifndef OBJLOG_OUTCOME_H
#define OBJLOG_OUTCOME_H

#include "objlog.pb-c.h"

/* "OK", "NoSuchBucket", "PreconditionFailed", ... */
const char *outcome_code_name(Objlog__OutcomeCode code);
/* 200, 404, 412, ... */
int outcome_http_status(Objlog__OutcomeCode code);
/* The HTTP status of the outcome named name (outcome_code_name's), 500
 * for a name no outcome has. */
int outcome_http_status_of_name(const char *name);

#endif
