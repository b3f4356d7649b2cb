package app

import (
	"bytes"
	"io"
	"math"
	"net/http"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// reservationBody is the optional body of POST .../reservations. Quantity is 0 when the body
// gives none (no key, or null); a given one is at least 1.
type reservationBody struct {
	Quantity int
	Token    string
}

// decodeReservationBody reads at most 4 KiB of strict JSON; an empty body means quantity 1.
// It reads into a pooled buffer and decodes by hand (parseReservationBody), so a body without
// a token allocates nothing.
func decodeReservationBody(r *http.Request) (reservationBody, *apiError) {
	// Most requests carry no body: answer them before anything escapes to the heap.
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return reservationBody{}, nil
	}
	bp := bodyBuffers.Get().(*[]byte)
	raw, err := readBody(r.Body, (*bp)[:0])
	var b reservationBody
	var e *apiError
	switch {
	case err != nil:
		e = badRequest("cannot read body")
	case len(raw) > maxBodyBytes:
		drain(r.Body)
		e = newError(http.StatusRequestEntityTooLarge, CodeTooLarge, "body over 4 KiB")
	default:
		b, e = parseReservationBody(raw)
	}
	*bp = raw[:0]
	bodyBuffers.Put(bp)
	return b, e
}

// drainMax is how much of a body over the limit the server reads and throws away before it
// answers 413: a client still writing its body when the server closes the connection gets a
// reset instead of the answer (the kernel resets a socket closed with unread data), and an
// ordinary client (Go's net/http, curl) writes the whole body before it reads. A body that
// announces more is answered at once, and its connection closed. The body's deadline (track,
// 1 s) bounds the time one takes.
const drainMax = 2 << 20

// drain reads and discards the rest of an oversized body, at most drainMax bytes. What it
// cannot read (a deadline, a broken connection) is left: the answer then closes the connection.
func drain(body io.Reader) {
	_, _ = io.CopyN(io.Discard, body, drainMax)
}

// readBody appends what r holds to buf, at most maxBodyBytes+1 bytes (one past the limit
// tells an oversized body), growing buf as needed. io.EOF is no error.
func readBody(r io.Reader, buf []byte) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):min(cap(buf), maxBodyBytes+1)])
		buf = buf[:len(buf)+n]
		if err == io.EOF || len(buf) > maxBodyBytes {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// maxTokenBytes bounds a body's token; the grab tokens the service mints are shorter.
const maxTokenBytes = 256

// parseReservationBody decodes raw as the encoding/json decoder it replaces did
// (refDecodeReservationJSON in reservebody_test.go, the reference of FuzzReservationBody):
// a body of white space (Unicode's, as bytes.TrimSpace) or a top-level null is no body; else
// an object with at most the keys quantity and token, each once and spelled exactly, compared
// after their escapes are decoded ("quantit\u0079" is quantity); quantity a JSON integer
// within int or null, token a string or null; nothing but JSON white space after the value
// (TestReservationBodyTrailingData). The
// reference's message precedence is kept: a wrong key met before any syntax error, then any
// syntax or type error, then trailing data, then the quantity's and the token's bounds.
func parseReservationBody(raw []byte) (reservationBody, *apiError) {
	var b reservationBody
	if len(bytes.TrimSpace(raw)) == 0 {
		return b, nil
	}
	p := bodyParser{s: raw}
	p.ws()
	given := false
	switch {
	case p.literal("null"):
	case p.peek() == '{':
		var e *apiError
		if given, e = p.object(&b); e != nil {
			return reservationBody{}, e
		}
	default:
		return reservationBody{}, badRequest("malformed JSON body")
	}
	p.ws()
	if p.i < len(p.s) {
		return reservationBody{}, badRequest("malformed JSON body: trailing data")
	}
	if given && b.Quantity < 1 {
		return reservationBody{}, badRequest("quantity must be at least 1")
	}
	if len(b.Token) > maxTokenBytes {
		return reservationBody{}, badRequest("token too long")
	}
	return b, nil
}

// bodyParser walks a JSON text with the grammar of encoding/json's scanner.
type bodyParser struct {
	s []byte
	i int
}

// peek is the byte at the cursor, 0 at the end (never a valid byte of JSON outside a string).
func (p *bodyParser) peek() byte {
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

func (p *bodyParser) ws() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// literal consumes lit if the text goes on with it.
func (p *bodyParser) literal(lit string) bool {
	if !bytes.HasPrefix(p.s[p.i:], []byte(lit)) {
		return false
	}
	p.i += len(lit)
	return true
}

// object decodes the object at the cursor into b; given tells a quantity was given.
func (p *bodyParser) object(b *reservationBody) (given bool, e *apiError) {
	malformed := func() (bool, *apiError) { return false, badRequest("malformed JSON body") }
	p.i++ // '{'
	p.ws()
	if p.peek() == '}' {
		p.i++
		return false, nil
	}
	var seenQuantity, seenToken, typeErr bool
	for {
		if p.peek() != '"' {
			return malformed()
		}
		start := p.i
		plain, ok := p.str()
		if !ok {
			return malformed()
		}
		key := p.s[start+1 : p.i-1]
		if !plain {
			var kb [16]byte
			key = appendUnquoted(kb[:0], key)
		}
		var seen *bool
		switch string(key) {
		case "quantity":
			seen = &seenQuantity
		case "token":
			seen = &seenToken
		default:
			return false, badRequest("malformed JSON body: unknown key " + strconv.Quote(string(key)))
		}
		if *seen {
			return false, badRequest("malformed JSON body: key " + strconv.Quote(string(key)) + " given twice")
		}
		*seen = true
		p.ws()
		if p.peek() != ':' {
			return malformed()
		}
		p.i++
		p.ws()
		switch {
		case p.literal("null"):
			// null leaves a pointer nil and a string as it is
		case seen == &seenQuantity && (p.peek() == '-' || isDigit(p.peek())):
			v, isInt, ok := p.number()
			if !ok {
				return malformed()
			}
			if !isInt {
				typeErr = true
			}
			b.Quantity, given = v, true
		case seen == &seenToken && p.peek() == '"':
			start := p.i
			plain, ok := p.str()
			if !ok {
				return malformed()
			}
			t := p.s[start+1 : p.i-1]
			if plain {
				b.Token = string(t)
			} else {
				var tb [64]byte
				b.Token = string(appendUnquoted(tb[:0], t))
			}
		default:
			if !p.value() {
				return malformed()
			}
			typeErr = true
		}
		p.ws()
		switch p.peek() {
		case ',':
			p.i++
			p.ws()
		case '}':
			p.i++
			if typeErr {
				return malformed()
			}
			return given, nil
		default:
			return malformed()
		}
	}
}

// value skips any JSON value at the cursor, false if there is none.
func (p *bodyParser) value() bool {
	switch c := p.peek(); {
	case c == '"':
		_, ok := p.str()
		return ok
	case c == '-' || isDigit(c):
		_, _, ok := p.number()
		return ok
	case c == '{', c == '[':
		end := byte('}')
		if c == '[' {
			end = ']'
		}
		p.i++
		p.ws()
		if p.peek() == end {
			p.i++
			return true
		}
		for {
			if c == '{' {
				if p.peek() != '"' {
					return false
				}
				if _, ok := p.str(); !ok {
					return false
				}
				p.ws()
				if p.peek() != ':' {
					return false
				}
				p.i++
				p.ws()
			}
			if !p.value() {
				return false
			}
			p.ws()
			switch p.peek() {
			case ',':
				p.i++
				p.ws()
			case end:
				p.i++
				return true
			default:
				return false
			}
		}
	default:
		return p.literal("true") || p.literal("false") || p.literal("null")
	}
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// number scans a JSON number; isInt tells an integer form (no fraction, no exponent) within
// int's range, which v then holds (what strconv.ParseInt takes, as encoding/json does for an
// int).
func (p *bodyParser) number() (v int, isInt, ok bool) {
	s, i := p.s, p.i
	neg := i < len(s) && s[i] == '-'
	if neg {
		i++
	}
	var mag uint64
	overflow := false
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && isDigit(s[i]):
		for ; i < len(s) && isDigit(s[i]); i++ {
			d := uint64(s[i] - '0')
			if mag > (math.MaxUint64-d)/10 {
				overflow = true
			}
			mag = mag*10 + d
		}
	default:
		return 0, false, false
	}
	isInt = true
	if i < len(s) && s[i] == '.' {
		i++
		if i >= len(s) || !isDigit(s[i]) {
			return 0, false, false
		}
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		isInt = false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i >= len(s) || !isDigit(s[i]) {
			return 0, false, false
		}
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		isInt = false
	}
	p.i = i
	switch {
	case !isInt || overflow:
		return 0, false, true
	case !neg && mag <= math.MaxInt:
		return int(mag), true, true
	case neg && mag <= math.MaxInt+1:
		return -int(mag-1) - 1, true, true
	}
	return 0, false, true
}

// str scans the JSON string at the cursor (its opening quote) with the scanner's rules: the
// escapes \" \\ \/ \b \f \n \r \t \uXXXX, no byte below 0x20, any other byte. plain tells
// that the bytes between the quotes are its value (no escape, valid UTF-8).
func (p *bodyParser) str() (plain, ok bool) {
	s, i := p.s, p.i+1
	plain = true
	for i < len(s) {
		c := s[i]
		switch {
		case c == '"':
			p.i = i + 1
			return plain, true
		case c < 0x20:
			return false, false
		case c == '\\':
			plain = false
			i++
			if i >= len(s) {
				return false, false
			}
			switch s[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				if hex4(s[i+1:]) < 0 {
					return false, false
				}
				i += 5
			default:
				return false, false
			}
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && size == 1 {
				plain = false
			}
			i += size
		}
	}
	return false, false
}

// hex4 is the value of the four hex digits s starts with, -1 without them.
func hex4(s []byte) rune {
	if len(s) < 4 {
		return -1
	}
	var r rune
	for _, c := range s[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

// appendUnquoted appends the value of the string contents s (scanned by str) to dst as
// encoding/json decodes it: each byte of invalid UTF-8 becomes U+FFFD, and so does a \u
// surrogate that is not the first of a valid pair.
func appendUnquoted(dst, s []byte) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\':
			e := s[i+1]
			i += 2
			switch e {
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				r := hex4(s[i:])
				i += 4
				if utf16.IsSurrogate(r) {
					if d := utf16.DecodeRune(r, escapedRune(s[i:])); d != utf8.RuneError {
						r, i = d, i+6
					} else {
						r = utf8.RuneError
					}
				}
				dst = utf8.AppendRune(dst, r)
			default: // '"', '\\', '/'
				dst = append(dst, e)
			}
		case c < utf8.RuneSelf:
			dst = append(dst, c)
			i++
		default:
			r, size := utf8.DecodeRune(s[i:])
			dst = utf8.AppendRune(dst, r)
			i += size
		}
	}
	return dst
}

// escapedRune is the value of the \uXXXX escape s starts with, -1 without one.
func escapedRune(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	return hex4(s[2:])
}
