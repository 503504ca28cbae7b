// The CSP has no 'unsafe-eval' (src/server/http/security-headers.ts): zod must not probe for eval in
// the browser, since even its caught probe (`Function("")`) is reported as a CSP violation.
import { z } from "zod";

z.config({ jitless: true });
