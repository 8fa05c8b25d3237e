package broker

// The archive: a file of messages read from any system, which keeps each
// message's own System. Its messages carry what their broker gave them, so
// it registers no MessageTraits of its own.
const (
	Archive System = "archive"

	KindArchive QueueKind = "archive"
)
