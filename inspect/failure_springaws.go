package inspect

// Spring Cloud AWS (SqsTemplate with its default message converter) sends
// the payload's class in a message attribute:
//
//	attribute   field
//	JavaType    message_type
//
// It records no failure: the reason stays what the message otherwise says.
const springAWSJavaType = "JavaType"

func decodeSpringAWS(in *failureInput, f *Failure) bool {
	t := in.text(springAWSJavaType)
	if t == "" {
		return false
	}
	f.Framework = "spring-cloud-aws"
	f.MessageType = t
	return true
}
