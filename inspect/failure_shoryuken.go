package inspect

// Shoryuken (Ruby, SQS) sends the worker class that performs a message in
// a message attribute (Shoryuken::Worker perform_async):
//
//	attribute         field
//	shoryuken_class   consumer
//
// It records no failure: the reason stays what the message otherwise says.
const shoryukenClass = "shoryuken_class"

func decodeShoryuken(in *failureInput, f *Failure) bool {
	c := in.text(shoryukenClass)
	if c == "" {
		return false
	}
	f.Framework = "shoryuken"
	f.Consumer = c
	return true
}
