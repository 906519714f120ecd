package runnerproto

// Version is the protocol the host and the supervisor speak, as
// LabelRunner carries it.
const Version = "7"

// TokenBytes is the size of a run's token, in random bytes (hex on the
// wire, so twice as many characters).
const TokenBytes = 16

// The image labels and the environment variable through which an image
// says what it is.
const (
	// LabelRunner is the image label that holds the protocol its runner
	// speaks (Version).
	LabelRunner = "io.sandboxd.runner"
	// LabelLanguages is the image label that lists the canonical names of
	// the languages the image runs, comma-separated, e.g.
	// "javascript,typescript,bash" (typescript needs javascript).
	LabelLanguages = "io.sandboxd.languages"
	// EnvLanguages names the variable of the image's environment that lists
	// the stubs the supervisor may start, comma-separated, the first warm.
	EnvLanguages = "SANDBOX_LANGUAGES"
)

// The acks and markers: each starts with Magic, the run's token and a colon.
const (
	// Magic starts every ack and end marker.
	Magic = "\x00sandboxd:"
	// AckGo ends the ack, "<Magic><token>:go\n", sent once the program is
	// read and before it runs.
	AckGo = "go"
	// AckLate ends the late ack, sent when the program came before the
	// runner was ready for it: the time limit then counts from the ack.
	AckLate = "gl"
	// MarkerTail is the shape of a one-shot run's end marker after its
	// prefix: 'd' stands for a decimal digit, anything else for itself.
	MarkerTail = "ddd dddddddddd dddddddddd dddddddddd d\n"
	// SessionMarkerTail is the shape of a session call's end marker:
	// MarkerTail's fields, then the value's flag, its length and the
	// interrupt's flag.
	SessionMarkerTail = "ddd dddddddddd dddddddddd dddddddddd d d dddddddddd d\n"
)

// The kinds of record.
const (
	// KindContent is a file with its content.
	KindContent = 'c'
	// KindListed is a file out listed by name and size, over the caps.
	KindListed = 'l'
)

// The bounds, the same at both ends.
const (
	// MaxEntries is the most entries the walk of the files out visits.
	MaxEntries = 10000
	// MaxDepth is the most directory levels the walk of the files out
	// descends.
	MaxDepth = 32
	// ListExtra is the most files out listed without content past the
	// max_files sent with content.
	ListExtra = 64
	// MaxNameBytes is the longest name of a file, in or out.
	MaxNameBytes = 1024
	// MaxPartBytes is the longest part of a name (NAME_MAX).
	MaxPartBytes = 255
)
