// "Try it": a new image classified with the volunteer's personal prompt,
// its five likeliest classes shown with their probabilities.
import { $, page, requireModel, showError } from './page.js';

export async function tryImage(file) {
  showError(null, 'try-error');
  requireModel();
  const { best, probabilities } = await page.compute.call('predict', { image: { blob: file } });
  const order = Array.from(probabilities.keys()).sort((a, b) => probabilities[b] - probabilities[a]).slice(0, 5);
  const url = URL.createObjectURL(file);
  // the task's class names as text, never markup
  const escape = (s) => s.replace(/[&<>"]/g, (ch) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[ch]);
  const classes = page.description.classes.map(escape);
  $('try-result').innerHTML = `<p><img src="${url}" alt="" style="max-height:96px;vertical-align:middle"> ` +
    `<strong>${classes[best]}</strong></p><div class="bars">` + order.map((c) =>
    `<span class="${c === best ? 'best' : ''}">${classes[c]}</span>` +
    `<div class="bar" style="width:${(100 * probabilities[c]).toFixed(1)}%"></div>` +
    `<span>${(100 * probabilities[c]).toFixed(1)}%</span>`).join('') + '</div>';
}
