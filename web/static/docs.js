// docs.js renders /docs from the contract the server serves. validatorUrl
// null: Swagger UI would otherwise send the document to an outside validator.
window.ui = SwaggerUIBundle({
  url: "/v1/openapi.json",
  dom_id: "#swagger-ui",
  deepLinking: true,
  validatorUrl: null,
});
