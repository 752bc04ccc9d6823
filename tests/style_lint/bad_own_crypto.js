// A primitive's own constants in the page's JavaScript: tests/style_lint.py must find them.
const FIRST_ROUND = [0x428a2f98, 0x71374491]; /* found */
const STATE = 0x6A09E667F3BCC908n; /* found */
const SIGMA = 'expand 32-byte k'; /* found */
export const mixed = () => FIRST_ROUND[0] + Number(STATE & 1n) + SIGMA.length + 121665; /* found */
