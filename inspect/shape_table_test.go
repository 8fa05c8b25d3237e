package inspect

// realReasons are failure reasons as frameworks, drivers and SDKs write
// them, each with the group (template) it must land in.
var realReasons = []struct{ reason, template string }{
	// Spring AMQP
	{"org.springframework.amqp.rabbit.support.ListenerExecutionFailedException: Listener method 'public void com.acme.orders.OrderListener.handle(com.acme.orders.Order)' threw exception", "org.springframework.amqp.rabbit.support.ListenerExecutionFailedException: Listener method '<str>' threw exception"},
	{"org.springframework.amqp.rabbit.support.ListenerExecutionFailedException: Listener threw exception", "org.springframework.amqp.rabbit.support.ListenerExecutionFailedException: Listener threw exception"},
	{"Failed to convert message payload 'order-18291' to 'com.acme.Order'", "Failed to convert message payload '<str>' to '<str>'"},
	// Jackson
	{"com.fasterxml.jackson.databind.exc.InvalidFormatException: Cannot deserialize value of type `java.time.LocalDate` from String \"2024-13-45\": Failed to deserialize java.time.LocalDate: (java.time.format.DateTimeParseException) Text '2024-13-45' could not be parsed", "com.fasterxml.jackson.databind.exc.InvalidFormatException: Cannot deserialize value of type `java.time.LocalDate` from String \"<str>\": Failed to deserialize java.time.LocalDate: (java.time.format.DateTimeParseException) Text '<str>' could not be parsed"},
	{"com.fasterxml.jackson.databind.exc.InvalidFormatException: Cannot deserialize value of type `java.time.LocalDate` from String \"31/02/2024\": Failed to deserialize java.time.LocalDate: (java.time.format.DateTimeParseException) Text '31/02/2024' could not be parsed", "com.fasterxml.jackson.databind.exc.InvalidFormatException: Cannot deserialize value of type `java.time.LocalDate` from String \"<str>\": Failed to deserialize java.time.LocalDate: (java.time.format.DateTimeParseException) Text '<str>' could not be parsed"},
	{"com.fasterxml.jackson.core.JsonParseException: Unexpected character ('}' (code 125)): was expecting double-quote to start field name at [Source: (String)\"{\"id\":42,}\"; line: 1, column: 11]", "com.fasterxml.jackson.core.JsonParseException: Unexpected character ('<str>' (code <num>)): was expecting double-quote to start field name at [Source: (String)\"<str>\":<num>,}\"; line: <num>, column: <num>]"},
	{"com.fasterxml.jackson.databind.exc.UnrecognizedPropertyException: Unrecognized field \"customerRef\" (class com.acme.Order), not marked as ignorable (12 known properties)", "com.fasterxml.jackson.databind.exc.UnrecognizedPropertyException: Unrecognized field \"<str>\" (class com.acme.Order), not marked as ignorable (<num> known properties)"},
	// Hibernate / Postgres / MySQL
	{"org.hibernate.exception.ConstraintViolationException: could not execute statement; SQL [n/a]; constraint [orders_pkey]", "org.hibernate.exception.ConstraintViolationException: could not execute statement; SQL [n/a]; constraint [orders_pkey]"},
	{"ERROR: duplicate key value violates unique constraint \"orders_pkey\" Detail: Key (id)=(48213) already exists.", "ERROR: duplicate key value violates unique constraint \"<str>\" Detail: Key (id)=(<num>) already exists."},
	{"ERROR: duplicate key value violates unique constraint \"orders_pkey\" Detail: Key (id)=(99120) already exists.", "ERROR: duplicate key value violates unique constraint \"<str>\" Detail: Key (id)=(<num>) already exists."},
	{"ERROR: duplicate key value violates unique constraint \"users_email_key\" Detail: Key (email)=(ann@example.com) already exists.", "ERROR: duplicate key value violates unique constraint \"<str>\" Detail: Key (email)=(<email>) already exists."},
	{"ERROR: insert or update on table \"order_lines\" violates foreign key constraint \"order_lines_order_id_fkey\" Detail: Key (order_id)=(7781) is not present in table \"orders\".", "ERROR: insert or update on table \"<str>\" violates foreign key constraint \"<str>\" Detail: Key (order_id)=(<num>) is not present in table \"<str>\"."},
	{"ERROR: null value in column \"customer_id\" of relation \"orders\" violates not-null constraint", "ERROR: null value in column \"<str>\" of relation \"<str>\" violates not-null constraint"},
	{"java.sql.SQLIntegrityConstraintViolationException: Duplicate entry 'SKU-4821' for key 'products.sku'", "java.sql.SQLIntegrityConstraintViolationException: Duplicate entry '<str>' for key '<str>'"},
	{"java.sql.SQLIntegrityConstraintViolationException: Duplicate entry 'SKU-77' for key 'products.sku'", "java.sql.SQLIntegrityConstraintViolationException: Duplicate entry '<str>' for key '<str>'"},
	{"SQLSTATE[23000]: Integrity constraint violation: 1062 Duplicate entry '1042' for key 'PRIMARY'", "SQLSTATE[<num>]: Integrity constraint violation: <num> Duplicate entry '<str>' for key '<str>'"},
	{"org.postgresql.util.PSQLException: ERROR: deadlock detected Detail: Process 4211 waits for ShareLock on transaction 99812; blocked by process 4307.", "org.postgresql.util.PSQLException: ERROR: deadlock detected Detail: Process <num> waits for ShareLock on transaction <num>; blocked by process <num>."},
	{"org.postgresql.util.PSQLException: ERROR: deadlock detected Detail: Process 18 waits for ShareLock on transaction 7; blocked by process 22.", "org.postgresql.util.PSQLException: ERROR: deadlock detected Detail: Process <num> waits for ShareLock on transaction <num>; blocked by process <num>."},
	// MassTransit / NServiceBus (type: message, as Reason joins them)
	{"System.InvalidOperationException: Customer cus_9944 not found", "System.InvalidOperationException: Customer <id> not found"},
	{"System.InvalidOperationException: Customer cus_1207 not found", "System.InvalidOperationException: Customer <id> not found"},
	{"System.InvalidOperationException: Order ord_5521 not found", "System.InvalidOperationException: Order <id> not found"},
	{"System.TimeoutException: The operation has timed out after 00:00:30", "System.TimeoutException: The operation has timed out after <time>"},
	{"System.TimeoutException: The operation has timed out after 00:01:00", "System.TimeoutException: The operation has timed out after <time>"},
	{"MassTransit.RequestTimeoutException: Timeout waiting for response, RequestId: 7f1c2a9e-3b4d-4e5f-8a6b-1c2d3e4f5a6b", "MassTransit.RequestTimeoutException: Timeout waiting for response, RequestId: <uuid>"},
	{"NServiceBus.Transport.MessageDeserializationException: An error occurred while attempting to extract logical messages from incoming physical message 5d2e1f0a-8b7c-4d3e-9f1a-2b3c4d5e6f70", "NServiceBus.Transport.MessageDeserializationException: An error occurred while attempting to extract logical messages from incoming physical message <uuid>"},
	// Python tracebacks (last line)
	{"KeyError: 'customer_id'", "KeyError: '<str>'"},
	{"KeyError: 'shipping_address'", "KeyError: '<str>'"},
	{"ValueError: invalid literal for int() with base 10: 'abc'", "ValueError: invalid literal for int() with base <num>: '<str>'"},
	{"requests.exceptions.ReadTimeout: HTTPSConnectionPool(host='api.payments.example.com', port=443): Read timed out. (read timeout=30)", "requests.exceptions.ReadTimeout: HTTPSConnectionPool(host='<str>', port=<num>): Read timed out. (read timeout=<num>)"},
	{"requests.exceptions.ConnectionError: HTTPSConnectionPool(host='api.payments.example.com', port=443): Max retries exceeded with url: /v1/charges/ch_3NfK2a9 (Caused by NewConnectionError('<urllib3.connection.HTTPSConnection object at 0x7f3a2c1b5d90>: Failed to establish a new connection: [Errno 111] Connection refused'))", "requests.exceptions.ConnectionError: HTTPSConnectionPool(host='<str>', port=<num>): Max retries exceeded with url: /v1/charges/<id> (Caused by NewConnectionError('<str>'))"},
	{"psycopg2.errors.UniqueViolation: duplicate key value violates unique constraint \"payments_pkey\"", "psycopg2.errors.UniqueViolation: duplicate key value violates unique constraint \"<str>\""},
	// Node / axios
	{"AxiosError: Request failed with status code 503", "AxiosError: Request failed with status code <num>"},
	{"AxiosError: Request failed with status code 502", "AxiosError: Request failed with status code <num>"},
	{"Error: connect ECONNREFUSED 10.0.3.17:5432", "Error: connect ECONNREFUSED <ip>:<num>"},
	{"Error: connect ECONNREFUSED 10.0.3.18:5432", "Error: connect ECONNREFUSED <ip>:<num>"},
	{"Error: getaddrinfo ENOTFOUND inventory.internal", "Error: getaddrinfo ENOTFOUND inventory.internal"},
	{"TypeError: Cannot read properties of undefined (reading 'sku')", "TypeError: Cannot read properties of undefined (reading '<str>')"},
	{"Error: timeout of 5000ms exceeded", "Error: timeout of <time> exceeded"},
	// Go net/http
	{`Post "https://api.example.com/v1/orders/48213/capture": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`, "Post \"https://api.example.com/v1/orders/<num>/capture\": context deadline exceeded (Client.Timeout exceeded while awaiting headers)"},
	{`Post "https://api.example.com/v1/orders/99120/capture": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`, "Post \"https://api.example.com/v1/orders/<num>/capture\": context deadline exceeded (Client.Timeout exceeded while awaiting headers)"},
	{`Get "http://10.0.0.12:8080/inventory/SKU-4821?warehouse=7": dial tcp 10.0.0.12:8080: connect: connection refused`, "Get \"http://<ip>:<num>/inventory/<id>?warehouse=<num>\": dial tcp <ip>:<num>: connect: connection refused"},
	{"read tcp 10.1.2.3:51234->10.1.2.4:443: read: connection reset by peer", "read tcp <ip>:<num>-><ip>:<num>: read: connection reset by peer"},
	{"Read timed out", "Read timed out"},
	{"Connection refused", "Connection refused"},
	// AWS SDK
	{"operation error DynamoDB: PutItem, https response error StatusCode: 400, RequestID: 8V1Q2E3R4T5Y6U7I8O9P0A1S2D3F4G5H6J7K8L9Z0X1C2V3B4N, ConditionalCheckFailedException: The conditional request failed", "operation error DynamoDB: PutItem, https response error StatusCode: <num>, RequestID: <id>, ConditionalCheckFailedException: The conditional request failed"},
	{"operation error DynamoDB: PutItem, https response error StatusCode: 400, RequestID: QWERTYUIOP1234567890ASDFGHJKLZXCVBNM0987654321MNBV, ConditionalCheckFailedException: The conditional request failed", "operation error DynamoDB: PutItem, https response error StatusCode: <num>, RequestID: <id>, ConditionalCheckFailedException: The conditional request failed"},
	{"operation error S3: GetObject, https response error StatusCode: 404, RequestID: 0K3R7B2W9Q, HostID: abc, api error NoSuchKey: The specified key does not exist.", "operation error S3: GetObject, https response error StatusCode: <num>, RequestID: <id>, HostID: abc, api error NoSuchKey: The specified key does not exist."},
	{"ThrottlingException: Rate exceeded (Service: AmazonDynamoDBv2; Status Code: 400; Error Code: ThrottlingException; Request ID: 5JQ8H2V1L0; Proxy: null)", "ThrottlingException: Rate exceeded (Service: AmazonDynamoDBv2; Status Code: <num>; Error Code: ThrottlingException; Request ID: <id>; Proxy: null)"},
	// gRPC
	{"rpc error: code = Unavailable desc = connection error: desc = \"transport: Error while dialing dial tcp 10.4.0.9:50051: connect: connection refused\"", "rpc error: code = Unavailable desc = connection error: desc = \"<str>\""},
	{"rpc error: code = DeadlineExceeded desc = context deadline exceeded", "rpc error: code = DeadlineExceeded desc = context deadline exceeded"},
	{"rpc error: code = NotFound desc = customer cus_4410 not found", "rpc error: code = NotFound desc = customer <id> not found"},
	{"rpc error: code = NotFound desc = customer cus_7781 not found", "rpc error: code = NotFound desc = customer <id> not found"},
	// 503 with SKU and request id, as the issue describes
	{"Inventory service returned 503 for SKU-4821 (request 1b4e28ba-2fa1-11d2-883f-0016d3cca427)", "Inventory service returned <num> for <id> (request <uuid>)"},
	{"Inventory service returned 503 for SKU-90 (request 6fa459ea-ee8a-3ca4-894e-db77e160355e)", "Inventory service returned <num> for <id> (request <uuid>)"},
	// Broker reasons
	{"rejected", "rejected"},
	{"expired", "expired"},
	{"delivery_limit", "delivery_limit"},
	{"Message 18211 failed after 5 attempts; last error at 2024-05-01T12:03:44.120Z from user bob@example.com", "Message <num> failed after <num> attempts; last error at <time> from user <email>"},
}

// mergedReasons are reasons whose shapes differ in a literal word that
// Mine merges (with <*> there), and pairs it keeps apart.
var mergedReasons = []struct{ reason, template string }{
	{"Unknown event type OrderShipped", "Unknown event type <*>"},
	{"Unknown event type OrderCancelled", "Unknown event type <*>"},
	{"Unknown event type InvoiceIssued", "Unknown event type <*>"},
	{"Validation failed: field amount is required", "Validation failed: field <*> is required"},
	{"Validation failed: field currency is required", "Validation failed: field <*> is required"},
	{"NServiceBus.MessageHandlerException: Handler for OrderPlaced failed", "NServiceBus.MessageHandlerException: Handler for <*> failed"},
	{"NServiceBus.MessageHandlerException: Handler for PaymentCaptured failed", "NServiceBus.MessageHandlerException: Handler for <*> failed"},
	// The first words name the error: never merged.
	{"Customer cus_9944 not found", "Customer <id> not found"},
	{"Order ord_5521 not found", "Order <id> not found"},
	// Too little in common.
	{"Payment declined: insufficient funds", "Payment declined: insufficient funds"},
	{"Payment declined: card expired", "Payment declined: card expired"},
	// A placeholder never merges with a word.
	{"Request failed with status code 503 on retry", "Request failed with status code <num> on retry"},
	{"Request failed with status code unknown on retry", "Request failed with status code unknown on retry"},
}
