// Five calls through the types openapi-typescript generates from yard's
// /openapi.json (yard.ts), with openapi-fetch, as a person with Basic; run
// by TestGeneratedClients (docs/clients.md, "Generated clients") with
// YARD_URL, YARD_USER, YARD_PASSWORD and NODE_EXTRA_CA_CERTS. It prints
// one JSON line of what it read.
import createClient from "openapi-fetch";
import type { components, paths } from "./yard";

type Bark = components["schemas"]["Bark"];

const auth = "Basic " + Buffer.from(process.env.YARD_USER + ":" + process.env.YARD_PASSWORD).toString("base64");
const client = createClient<paths>({ baseUrl: process.env.YARD_URL, headers: { Authorization: auth } });

function unexpected(what: string, status: number, body: unknown): never {
  throw new Error(what + ": " + status + " " + JSON.stringify(body));
}

async function main(): Promise<void> {
  const list = await client.GET("/v1/dogs");
  if (!list.data) unexpected("list dogs", list.response.status, list.error);

  const created = await client.POST("/v1/dogs", { body: { name: "Rex", email: "rex@example.org", barkEffect: "email-count" } });
  if (!created.data) unexpected("create a dog", created.response.status, created.error);
  const dog = created.data;

  // An asynchronous bark, then its task read until it finishes, with
  // redirects off: an email-count bark's task ends with 303, its body the
  // task. openapi-fetch hands every answer but a 2xx over as error.
  const bark = await client.POST("/v1/dogs/{dog_id}/barks", {
    params: { path: { dog_id: dog.id }, header: { Prefer: "respond-async" } },
  });
  if (bark.response.status !== 202 || !bark.data) unexpected("an asynchronous bark", bark.response.status, bark.error);
  let task: Bark = bark.data;
  let status = bark.response.status;
  for (let i = 0; i < 30 && !["succeeded", "failed", "canceled"].includes(task.status); i++) {
    const got = await client.GET("/v1/dogs/{dog_id}/barks/{bark_id}", {
      params: { path: { dog_id: dog.id, bark_id: bark.data.id }, header: { Prefer: "wait=10" } },
      redirect: "manual",
    });
    status = got.response.status;
    if (status === 200 && got.data) task = got.data;
    else if (status === 303) task = got.error as unknown as Bark;
    else unexpected("read the task", status, got.error);
  }
  if (task.status !== "succeeded" || status !== 303 || task.id !== bark.data.id) unexpected("the finished task", status, task);

  const red = await client.GET("/cars", { params: { query: { color: "red" } } });
  if (!red.data || red.data.items.length === 0) unexpected("list red cars", red.response.status, red.error);
  if (red.data.items.some((c) => c.color.toLowerCase() !== "red")) unexpected("list red cars", red.response.status, red.data);

  const car = await client.GET("/cars/{car_id}", { params: { path: { car_id: red.data.items[0].id } } });
  if (!car.data) unexpected("read a car", car.response.status, car.error);

  console.log(JSON.stringify({ dogs: list.data.total, dog: dog.id, task: task.id, taskStatus: status, redCars: red.data.total, car: car.data.id }));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
