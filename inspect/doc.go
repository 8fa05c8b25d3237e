// Package inspect reads dead letters without harming them: it turns each
// message into one JSON-like document that filters, transforms, statistics
// and the TUI share, extracts a failure reason, decodes bodies, walks queues
// through the peek-safety rules of broker.Peeker, aggregates statistics in
// flat memory, and copies messages into archives.
//
// The document of a message (see Document) is
//
//	{id, queue, system, headers, properties, attributes, system_attributes,
//	 death, delivery_count, redelivered, timestamp, age_seconds, size,
//	 reason, failure, shape, group, body, envelope}
//
// where body is the parsed JSON when the (inflated) body is JSON, else the
// text, else null with body_base64 holding the bytes, shape is the reason
// with its variable parts masked (Shape) and group the shape's GroupID.
// failure is the normalised failure record that a framework or AWS service
// left on the message (FailureOf: one decoder per framework in the
// failure_*.go files), and when the body is an envelope (MassTransit, SNS,
// a Lambda on-failure record, NServiceBus on SQS) body is the payload inside
// it and envelope the envelope's other fields.
//
// Failure groups: Stats groups reasons by shape and merges shapes that
// differ only in a word into templates (Mine); GroupSelector selects the
// messages of groups by ID.
package inspect
