package inspect

// Laravel's queue sends a job as a JSON body (Illuminate\Queue\Queue
// createPayloadArray); on SQS a job that fails past its tries is deleted
// or, with a redrive policy, lands in the DLQ as it was. Laravel keeps the
// exception in its failed_jobs table, not in the message: the reason stays
// what the message otherwise says.
//
//	body field    field
//	displayName   message_type (the job's class)
//	uuid          id
//	job           consumer (the handler, "Illuminate\Queue\CallQueuedHandler@call")
func decodeLaravel(in *failureInput, f *Failure) bool {
	b := &in.body
	if b[bkDisplayName] == nil || b[bkJob] == nil || b[bkData] == nil {
		return false
	}
	f.Framework = "laravel"
	f.MessageType = in.field(bkDisplayName)
	f.ID = in.field(bkUUID)
	f.Consumer = in.field(bkJob)
	return true
}
