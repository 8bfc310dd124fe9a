/**
 * A process that reads one PDF with the default reader (its worker then idle, kept for IDLE_MS)
 * and prints `read <kind>`: tests/server/document-reader-workers.test.ts times how soon it exits.
 */
import { createDocumentReader } from '../../server/documents/document-reader.js';
import { textPdf } from './pdf.js';

const reader = createDocumentReader();
const u = `data:application/pdf;base64,${textPdf(['once']).toString('base64')}`;
const lookup = await reader.prepare({
  model: 'm',
  messages: [{ role: 'user', content: [{ type: 'file', file: { file_data: u } }] }],
});
process.stdout.write(`read ${lookup?.(u)?.kind} idle ${reader.workersIdle}\n`);
