/* testlog.h: the log a process-level test runs against.
 * OBJLOG_TEST_LOG picks it for the whole test program:
 *   mock  (default) `objlogd --kafka-only`: librdkafka's mock cluster, fast;
 *   kafka           a real Apache Kafka KRaft cluster of OBJLOG_TEST_KAFKA_NODES
 *                   (default 3) combined nodes from ops/kafka.sh, its topics
 *                   made by `objlog topics create`.
 * One log per test program, started in its setup; with OBJLOG_TEST_KAFKA_DIR
 * (ctest's kafka_cluster fixture) the program borrows that running cluster
 * instead: it deletes every topic left in it, makes its own, and cannot
 * signal, stop or start its nodes (those calls return -1). Every node is a child of
 * the test (proc.h): killed with it, even when it fails or crashes; no JVM
 * outlives the test. Nodes are numbered 1..N, the same as Kafka's node.id
 * (and broker id), so a partition's leader names the node to kill. */
#ifndef OBJLOG_TEST_TESTLOG_H
#define OBJLOG_TEST_TESTLOG_H

#include <stddef.h>
#include <sys/types.h>

typedef struct testlog testlog;

/* 1 when OBJLOG_TEST_LOG=kafka. */
int testlog_is_kafka(void);
/* "mock" or "kafka", for test output. */
const char *testlog_kind(void);

/* Starts the log with objlog.events of `partitions` partitions. NULL with
 * a message on stderr. */
testlog *testlog_start(int partitions);
const char *testlog_bootstrap(const testlog *l);
/* Kafka nodes (0 for the mock cluster). */
int testlog_nodes(const testlog *l);

/* Kafka only; node in 1..N. 0, or -1. */
int testlog_node_signal(testlog *l, int node, int sig);   /* e.g. SIGSTOP/SIGCONT */
int testlog_node_kill(testlog *l, int node);              /* SIGKILL and reap */
int testlog_node_stop(testlog *l, int node, int timeout_ms); /* SIGTERM; 0 = exit 0 */
int testlog_node_start(testlog *l, int node);             /* again, same dir/ports */
int testlog_node_running(const testlog *l, int node);
/* Waits until every running node is registered and serves metadata. */
int testlog_wait_ready(testlog *l, int timeout_ms);
/* Leader node of topic/partition per metadata, or -1. */
int testlog_leader(testlog *l, const char *topic, int partition, int timeout_ms);

/* A view of this log: `objlogd --brokers <l> --listen 127.0.0.1:0 --data
 * data [extra...]` (extra NULL-ended, may be NULL) as a child of the test;
 * waits for OBJLOG_READY and fills url ("http://127.0.0.1:port", https://
 * when extra has --tls-cert). NULL
 * with a message on stderr. The one start_view of the process tests. */
struct proc;
struct proc *testlog_start_view(const testlog *l, const char *data, char *const extra[],
                                char *url, size_t url_size);
/* The same with the view's log lines (its stderr) appended to err_path
 * (NULL: the test's stderr). */
struct proc *testlog_start_view_err(const testlog *l, const char *data, char *const extra[],
                                    const char *err_path, char *url, size_t url_size);

/* Stops everything (Kafka nodes by SIGKILL: their files go too) and
 * removes its files. */
void testlog_stop(testlog *l);

#endif
