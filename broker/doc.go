// Package broker holds dlq's neutral vocabulary: queues, messages, death
// records, destinations, and the small capability interfaces that the
// RabbitMQ, SQS and archive adapters implement.
//
// The libraries (inspect, redrive, topology) speak only this package. A
// backend that lacks a capability does not implement its interface; callers
// type-assert, for example:
//
//	if p, ok := b.(broker.Peeker); ok { ... }
//
// Adapters translate their SDK errors into the error values below so that no
// library ever sees an SDK type.
package broker
