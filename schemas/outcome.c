/* outcome.c: see outcome.h. Unknown codes (a newer writer) map to
 * InternalError/500 rather than being mistaken for success. */
#include "outcome.h"

#include <string.h>

typedef struct outcome_row {
    Objlog__OutcomeCode code;
    const char *name;
    int http_status;
} outcome_row;

static const outcome_row outcome_table[] = {
    {OBJLOG__OUTCOME_CODE__OUTCOME_OK, "OK", 200},
    {OBJLOG__OUTCOME_CODE__OUTCOME_NO_SUCH_BUCKET, "NoSuchBucket", 404},
    {OBJLOG__OUTCOME_CODE__OUTCOME_NO_SUCH_KEY, "NoSuchKey", 404},
    {OBJLOG__OUTCOME_CODE__OUTCOME_BUCKET_ALREADY_EXISTS, "BucketAlreadyExists", 409},
    {OBJLOG__OUTCOME_CODE__OUTCOME_BUCKET_NOT_EMPTY, "BucketNotEmpty", 409},
    {OBJLOG__OUTCOME_CODE__OUTCOME_PRECONDITION_FAILED, "PreconditionFailed", 412},
    {OBJLOG__OUTCOME_CODE__OUTCOME_QUOTA_EXCEEDED, "QuotaExceeded", 403},
    {OBJLOG__OUTCOME_CODE__OUTCOME_TOO_MANY_VERSIONS, "TooManyVersions", 400},
    {OBJLOG__OUTCOME_CODE__OUTCOME_WRONG_RANGE, "WrongRange", 409},
    {OBJLOG__OUTCOME_CODE__OUTCOME_INVALID_EVENT, "InvalidEvent", 400},
    {OBJLOG__OUTCOME_CODE__OUTCOME_INVALID_ARGUMENT, "InvalidArgument", 400},
    {OBJLOG__OUTCOME_CODE__OUTCOME_NO_SUCH_UPLOAD, "NoSuchUpload", 404},
    {OBJLOG__OUTCOME_CODE__OUTCOME_NO_SUCH_VERSION, "NoSuchVersion", 404},
    {OBJLOG__OUTCOME_CODE__OUTCOME_INVALID_PART, "InvalidPart", 400},
    {OBJLOG__OUTCOME_CODE__OUTCOME_INVALID_PART_ORDER, "InvalidPartOrder", 400},
    {OBJLOG__OUTCOME_CODE__OUTCOME_ENTITY_TOO_SMALL, "EntityTooSmall", 400},
    /* Lifecycle: an Expire the state machine did not carry out. */
    {OBJLOG__OUTCOME_CODE__OUTCOME_NOT_DUE, "NotDue", 409},
    {OBJLOG__OUTCOME_CODE__OUTCOME_LIFECYCLE_SKIPPED, "LifecycleSkipped", 409},
    {OBJLOG__OUTCOME_CODE__OUTCOME_NO_SUCH_INDEX, "NoSuchIndex", 404},
    {OBJLOG__OUTCOME_CODE__OUTCOME_INDEX_ALREADY_EXISTS, "IndexAlreadyExists", 409},
    {OBJLOG__OUTCOME_CODE__OUTCOME_TOO_MANY_INDEXES, "TooManyIndexes", 400},
    {OBJLOG__OUTCOME_CODE__OUTCOME_BUCKET_SPANS_RANGES, "BucketSpansRanges", 409},
    {OBJLOG__OUTCOME_CODE__OUTCOME_METHOD_NOT_ALLOWED, "MethodNotAllowed", 405},
};

static const outcome_row *outcome_find(Objlog__OutcomeCode code) {
    for (size_t i = 0; i < sizeof(outcome_table) / sizeof(outcome_table[0]); i++)
        if (outcome_table[i].code == code)
            return &outcome_table[i];
    return NULL;
}

const char *outcome_code_name(Objlog__OutcomeCode code) {
    const outcome_row *r = outcome_find(code);
    return r ? r->name : "InternalError";
}

int outcome_http_status_of_name(const char *name) {
    for (size_t i = 0; i < sizeof(outcome_table) / sizeof(outcome_table[0]); i++)
        if (strcmp(outcome_table[i].name, name) == 0)
            return outcome_table[i].http_status;
    return 500;
}

int outcome_http_status(Objlog__OutcomeCode code) {
    const outcome_row *r = outcome_find(code);
    return r ? r->http_status : 500;
}
