package brokertest

// ConcurrentCheck is the check that ends the concurrent-processes scenario,
// for the test that shows it catches a loss without a server.
var ConcurrentCheck = concurrentCheck
