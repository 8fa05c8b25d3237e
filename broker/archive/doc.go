// Package archive reads and writes dlq archives — JSON Lines files that hold
// messages from RabbitMQ and SQS losslessly — and serves an archive as a
// broker (list, inspect, peek, consume for redrive, publish by appending).
//
// The format is described in FormatHelp, which `dlq help archive-format`
// prints. Reading never modifies an archive; writing only appends, and a
// record is durable once Writer.Flush, Writer.Close or Broker.Publish has
// returned (each fsyncs the file).
package archive

// FormatHelp documents archive format version 1.
const FormatHelp = `A dlq archive is a JSON Lines file: one JSON object per line, UTF-8,
newline-terminated. A name ending in .gz is gzip-compressed (readers detect
gzip from the content; a file may hold several gzip members, one per flush).
Files are created with mode 0600: dead letters often carry personal data.

HEADER. The first line identifies the format and its version:

  {"dlq_archive":1,"created":"2025-03-14T09:30:00Z",
   "source":{"system":"rabbitmq","broker":"amqp://ops@rabbit:5672/shop","queue":"orders.dlq"},
   "generator":"dlq 1.0.0"}

A reader refuses a version newer than it knows. A header may appear again
later (files joined with cat); each one is checked. Blank lines are skipped.

RECORDS. Every other line is one message. Fields are left out when empty.

  id                  stable fingerprint (message-id, SQS MessageId, or h-<hash>)
  system              rabbitmq | sqs — where the message came from
  queue               the queue it was read from (the DLQ)
  broker              that broker's address, never with a password
  archived            when it was written to the archive (a TIME, below)
  body                the body as text when it is valid UTF-8 without control
                      characters other than tab, CR, LF; otherwise base64 and
  body_encoding       "base64". No "body" means no body; "" an empty one.
  headers             AMQP application headers, each {"type":T,"value":V}:
                        void (no value), bool, int8, int16, int32, int64,
                        uint8, uint16, uint32, uint64, float32, float64
                        (numbers; "NaN", "+Inf", "-Inf", "-0" as strings),
                        decimal {"scale":2,"value":12345}, string (one
                        that is not UTF-8 is its base64, with
                        "encoding":"base64"), bytes (base64), timestamp
                        (a TIME), table {name: typed value, …},
                        array [typed value, …]. Integers are exact, also
                        beyond 2^53. A header name or table key that is
                        not UTF-8, or starts with NUL, is written as
                        "\u0000base64:" and its bytes in base64.
  properties          content_type, content_encoding, delivery_mode, priority,
                      correlation_id, reply_to, expiration, message_id,
                      timestamp, type, user_id, app_id
  attributes          SQS message attributes:
                        {"Name":{"data_type":"String","string_value":"…"}}
                        {"Name":{"data_type":"Binary","binary_value":"<base64>"}}
  system_attributes   SQS system attributes as strings (ApproximateReceiveCount,
                      SentTimestamp, DeadLetterQueueSourceArn, MessageGroupId…)
  exchange, routing_key   what the message was delivered with (RabbitMQ)
  death               the normalised death record: reason, queue (origin),
                      queue_arn, exchange, routing_keys, count, first, last,
                      first_reason, first_queue, history [newest first:
                      reason, queue, exchange, routing_keys, count, time]
  delivery_count      x-delivery-count or ApproximateReceiveCount when read
  acquisitions        x-acquired-count when read (RabbitMQ 4.3 quorum queues:
                      every delivery, a requeued one included)
  redelivered         true when the broker flagged a redelivery
  timestamp           when the message was first published, where known
  position            where it sat (a stream offset, an SQS sequence number)
  unreadable          why dlq's AMQP client could not decode the message, which
                      was read through RabbitMQ's management API instead:
                      its header types are approximate (integers int64,
                      fractions float64)

TIMES (archived, timestamp, death's first, last and time, a timestamp
header) are RFC 3339 strings in UTC with up to nine fractional digits:
"2025-03-14T09:30:00.5Z". RFC 3339 ends at the year 9999, and an AMQP
timestamp may be any 64-bit number of seconds, so a time before the year 0
or after 9999 is a JSON number instead: seconds since 1970-01-01T00:00:00Z,
exact, with up to nine fractional digits (an AMQP timestamp of 2^62 is
4611686018427387904). Readers take both forms everywhere.

Example (shortened):

  {"id":"6400749a-…","system":"rabbitmq","queue":"orders.dlq",
   "broker":"amqp://rabbit:5672/shop","archived":"2025-03-14T09:30:00Z",
   "body":"{\"order_id\":\"ord_895580\"}",
   "headers":{"x-death":{"type":"array","value":[{"type":"table","value":{
     "count":{"type":"int64","value":1},"reason":{"type":"string","value":"rejected"},
     "queue":{"type":"string","value":"orders.q"}, …}}]}},
   "properties":{"content_type":"application/json","delivery_mode":2},
   "death":{"reason":"rejected","queue":"orders.q","exchange":"orders.x","count":1}}

GUARANTEES. A message written and read back is identical, field for field
(times come back in UTC). Unknown fields are ignored, so later minor versions
stay readable. Writers only append; a record is durable when the write call
that carries it returns: in a .gz file its gzip member is complete (CRC and
size written), and the file is fsynced, before dlq acknowledges or deletes
a source message. A write that fails (a full disk) is reported and nothing
after it counts as durable. A crash or a full disk can leave a torn end:
readers report it with its line number, and the next writer repairs it
before appending. In a plain .jsonl file it removes the unterminated last
line; in a .gz file it cuts after the last complete member whose CRC and
size check, and writes the complete lines still readable from the torn
member again as a new one. A file that does not start like a dlq archive,
and a .gz file damaged in any other way (a bad checksum, bytes that are not
gzip), are never truncated: dlq refuses to append to them. A file whose
content is gzip gets gzip members, whatever its name. Reading (peek,
stats, redrive from a file) never changes an archive; delete a file
yourself when you no longer need it.
`
