// Unit tests' setup: every heap snapshot verifies the columns it kept from the previous one
// against the state itself (backend.ts, setKeptColumnsVerification).
import { setKeptColumnsVerification } from "../core/state/backend";

setKeptColumnsVerification(true);
