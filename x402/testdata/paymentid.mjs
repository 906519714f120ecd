// paymentid.mjs writes paymentid.json: the verdicts of the official
// @x402/extensions 2.27.0 (validatePaymentIdentifier,
// extractAndValidatePaymentIdentifier, isValidPaymentId) over a table of
// payment-identifier extensions and ids, and its declaration
// (declarePaymentIdentifierExtension(false)), for the Go tests of package
// x402 to check without node.
//
// Regenerate (the packages are those of test/interop; the output is committed):
//
//   cd test/interop && node ../../x402/testdata/paymentid.mjs > ../../x402/testdata/paymentid.json
import { createRequire } from "node:module";

// The packages are resolved from the working directory (test/interop), not from this file.
const require = createRequire(process.cwd() + "/");
const {
  declarePaymentIdentifierExtension,
  extractAndValidatePaymentIdentifier,
  isValidPaymentId,
  validatePaymentIdentifier,
} = require("@x402/extensions");

const decl = declarePaymentIdentifierExtension(false);
const schema = decl.schema;
const id16 = "abcdefghij012345";
const id128 = "a".repeat(128);

// Each extension is the JSON text of extensions["payment-identifier"].
const extensions = {
  "absent id": `{"info":{"required":false}}`,
  "declaration echoed": JSON.stringify(decl),
  "official client": JSON.stringify({ info: { required: false, id: "pay_7d5d747be160e280504c099d984bcfe0" }, schema }),
  "required true": `{"info":{"required":true,"id":"${id16}"}}`,
  "16 characters": `{"info":{"required":false,"id":"${id16}"}}`,
  "128 characters": `{"info":{"required":false,"id":"${id128}"}}`,
  "15 characters": `{"info":{"required":false,"id":"${id16.slice(1)}"}}`,
  "129 characters": `{"info":{"required":false,"id":"${id128}a"}}`,
  "a dot": `{"info":{"required":false,"id":"abcdefghij01234.5"}}`,
  "a slash": `{"info":{"required":false,"id":"abcdefghij01234/5"}}`,
  "a space": `{"info":{"required":false,"id":"abcdefghij01234 5"}}`,
  "non-ASCII": `{"info":{"required":false,"id":"abcdefghij01234é5"}}`,
  "escaped letters": `{"info":{"required":false,"id":"\\u0061bcdefghij012345"}}`,
  "id a number": `{"info":{"required":false,"id":1234567890123456789}}`,
  "id empty": `{"info":{"required":false,"id":""}}`,
  "info a string": `{"info":"pay_7d5d747be160e280504c099d984bcfe0"}`,
  "info null": `{"info":null}`,
  "info an array": `{"info":[]}`,
  "no info": `{"id":"${id16}"}`,
  "Info for info": `{"Info":{"required":false,"id":"${id16}"}}`,
  "Id for id": `{"info":{"required":false,"Id":"${id16}"}}`,
  "no required": `{"info":{"id":"${id16}"}}`,
  "required a string": `{"info":{"required":"false","id":"${id16}"}}`,
  "extra fields": `{"info":{"required":false,"id":"${id16}","note":"x"},"other":1}`,
  "an array": `[{"info":{"required":false}}]`,
  "a string": `"${id16}"`,
  "a number": `1`,
  "false": `false`,
  "null": `null`,
};

const out = { declaration: JSON.stringify(decl), extensions: [], ids: [] };
for (const [name, text] of Object.entries(extensions)) {
  const value = JSON.parse(text);
  const extracted = extractAndValidatePaymentIdentifier({ extensions: { "payment-identifier": value } });
  out.extensions.push({
    name,
    extension: text,
    valid: validatePaymentIdentifier(value).valid,
    extracted: { valid: extracted.validation.valid, id: extracted.id },
  });
}
for (const id of ["", id16, id16.slice(1), id128, id128 + "a", "pay_7d5d747be160e280504c099d984bcfe0",
  "sdx_0123456789abcdef0123456789abcdef", "UPPER_lower-09__--", "has.dot.in.it.xx", "tab\there0123456789"]) {
  out.ids.push({ id, valid: isValidPaymentId(id) });
}
process.stdout.write(JSON.stringify(out, null, 2) + "\n");
