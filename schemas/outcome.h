/* outcome.h: the one table from a state-machine outcome to its S3 error code
 * and HTTP status (DESIGN §8), shared by the query service, the gateway and
 * the producer library so that every edge names an outcome the same way. */
#ifndef OBJLOG_OUTCOME_H
#define OBJLOG_OUTCOME_H

#include "objlog.pb-c.h"

/* "OK", "NoSuchBucket", "PreconditionFailed", ... */
const char *outcome_code_name(Objlog__OutcomeCode code);
/* 200, 404, 412, ... */
int outcome_http_status(Objlog__OutcomeCode code);

#endif
